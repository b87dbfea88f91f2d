package main

// main is required by -buildmode=c-shared and never runs: the host
// program's main does.
func main() {}
