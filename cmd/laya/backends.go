package main

// The Metal backend registers itself with the engine on darwin; elsewhere the package is inert.
import _ "github.com/layaapp/laya/metal"
