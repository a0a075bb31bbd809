package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// bench's floor pairs the fastest decode with the bandwidth read after it, over weights that are
// the bytes a token reads (the tiny model ties its embeddings, so that is every weight).
func TestBenchJSON(t *testing.T) {
	dir := writeTinyModel(t)
	var out bytes.Buffer
	if err := runBench([]string{"--model", dir, "--threads", "1", "--runs", "2", "--prompt-tokens", "4", "--gen-tokens", "3", "--json"}, &out); err != nil {
		t.Fatal(err)
	}
	var r benchResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }
	switch {
	case r.TokenBytes != r.WeightBytes || r.TokenBytes <= 0:
		t.Errorf("bytes per token %d, weights %d", r.TokenBytes, r.WeightBytes)
	case !(r.BandwidthGBs > 0) || r.PeakBandwidthGBs < r.BandwidthGBs || math.IsInf(r.PeakBandwidthGBs, 0):
		t.Errorf("bandwidth %v GB/s, peak %v", r.BandwidthGBs, r.PeakBandwidthGBs)
	case !near(r.FloorMsTok, float64(r.TokenBytes)/(r.BandwidthGBs*1e9)*1000):
		t.Errorf("floor %v ms for %d bytes at %v GB/s", r.FloorMsTok, r.TokenBytes, r.BandwidthGBs)
	case !near(r.FloorRatio, r.DecodeMsTok/r.FloorMsTok) || !near(r.DecodeMsTok, 1000/r.DecodeTokS):
		t.Errorf("decode %v ms/token (%v tok/s) over floor %v = %v", r.DecodeMsTok, r.DecodeTokS, r.FloorMsTok, r.FloorRatio)
	case !near(r.PeakFloorRatio, r.FloorRatio*r.PeakBandwidthGBs/r.BandwidthGBs):
		t.Errorf("peak floor ratio %v, floor ratio %v, bandwidth %v / %v", r.PeakFloorRatio, r.FloorRatio, r.BandwidthGBs, r.PeakBandwidthGBs)
	case r.Runs != 2 || r.PrefillTokS <= 0 || r.PeakRSS <= 0:
		t.Errorf("result %+v", r)
	}

	out.Reset()
	if err := runBench([]string{"--model", dir, "--threads", "1", "--runs", "1", "--prompt-tokens", "4", "--gen-tokens", "3"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "x the floor") {
		t.Errorf("text output %q", out.String())
	}
	if err := runBench([]string{"--model", dir, "--gen-tokens", "1"}, &out); err == nil {
		t.Error("--gen-tokens 1 accepted")
	}
}
