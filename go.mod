module github.com/layaapp/laya

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/progrium/macdriver v0.4.0
	golang.org/x/sys v0.50.0
	golang.org/x/text v0.44.0
	golang.org/x/time v0.16.0
)

require github.com/daulet/tokenizers v1.24.0
