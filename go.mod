module github.com/layaapp/laya

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/daulet/tokenizers v1.24.0 // indirect
	github.com/progrium/macdriver v0.4.0 // indirect
)
