package menu

import "github.com/layaapp/laya/models"

// Scan lists the models installed in Laya's models directory dir that the engine can run, found
// by models.Discover exactly as `laya models` finds them and checked with probe (models.OpenProbe
// in the app). A model is named as Discover names it: its directory, plus "/<file>.gguf" for a
// GGUF file. A missing dir has no models.
func Scan(dir string, probe models.Probe) []Installed {
	var out []Installed
	for _, f := range models.Discover(models.Locations{Laya: dir}, probe) {
		// A model the engine cannot open would only fail when picked; `laya models` says why.
		if f.Runnable {
			out = append(out, Installed{Name: f.Name, Path: f.Path})
		}
	}
	return out
}
