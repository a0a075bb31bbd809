// Package sysmem reports the machine's physical memory, for the limits that depend on it
// (how much of a model the app may lock in memory) and for diagnostics.
package sysmem
