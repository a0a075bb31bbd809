// Package emu is a metal.Device that runs the Metal kernels on the CPU: kernels/*.metal compiled
// as C++17 through msl.h, dispatched by the SIMT emulator in simt_linux.cpp with the grid and
// threadgroup sizes the backend asks for. It exists to test the kernels and the backend on
// machines without a Mac and is far slower than the CPU backend. It builds on Linux only
// (ucontext fibers); on a Mac the tests run the kernels on the real GPU instead.
package emu
