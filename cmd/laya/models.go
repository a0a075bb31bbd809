package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/layaapp/laya/config"
	"github.com/layaapp/laya/models"
	"github.com/layaapp/laya/models/download"
)

func init() {
	register("models", "list installed and discovered models, or the catalog", runModels)
}

func runModels(args []string) error {
	fs := flag.NewFlagSet("models", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	catalog := fs.Bool("catalog", false, "list the curated models laya pull offers")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return flag.ErrHelp
	}
	dir, err := modelsDir()
	if err != nil {
		return err
	}
	loc, err := models.DefaultLocations(dir)
	if err != nil {
		return err
	}
	// Every command runs the bundled model when given none, so it is listed wherever it is.
	loc.Bundled, _ = models.Bundled()
	found := models.Discover(loc, models.OpenProbe)
	if *catalog {
		return printCatalog(found, *asJSON)
	}
	if *asJSON {
		if found == nil {
			found = []models.Found{}
		}
		return writeJSON(found)
	}
	if len(found) == 0 {
		fmt.Printf("no models found in %s, the HuggingFace cache, LM Studio or Ollama; try laya models --catalog\n", loc.Laya)
		return nil
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSOURCE\tFORMAT\tSIZE\tPATH\tRUNS")
	for _, f := range found {
		runs := "yes (" + f.Arch + ")"
		if !f.Runnable {
			runs = "no: " + f.Reason
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", f.Name, f.Source, f.Format, download.FormatBytes(f.Size), f.Path, runs)
	}
	return w.Flush()
}

func printCatalog(found []models.Found, asJSON bool) error {
	cat, err := models.DefaultCatalog()
	if err != nil {
		return err
	}
	type row struct {
		models.Entry
		Installed string `json:"installed,omitempty"` // where a runnable copy already is
	}
	rows := make([]row, len(cat.Models))
	for i, e := range cat.Models {
		rows[i].Entry = e
		if f, ok := models.FindRepo(found, e.Repo, e.Files); ok {
			rows[i].Installed = f.Path
		}
	}
	if asJSON {
		return writeJSON(rows)
	}
	for _, r := range rows {
		have := ""
		if r.Installed != "" {
			have = "  [on this Mac: " + r.Installed + "]"
		}
		fim := ""
		if r.FIM {
			fim = ", fill-in-the-middle"
		}
		fmt.Printf("%s%s\n  %s — %s, ~%d MB, %s license%s\n  %s\n", r.ID, have, r.Name, r.Quant, r.SizeMB, r.License, fim, r.GoodFor)
		for _, s := range r.Speed {
			fmt.Printf("  %s\n", s)
		}
		fmt.Println()
	}
	return nil
}

// modelsDir is the models directory the app uses: config.toml's model_dir, else the platform's.
func modelsDir() (string, error) {
	path, err := config.Path()
	if err != nil {
		return "", err
	}
	cfg, warn := config.NewStore(path).Load()
	if warn != nil {
		fmt.Fprintf(os.Stderr, "laya: %v\n", warn)
	}
	return cfg.ModelsDir()
}

func writeJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
