// Command allot is Allot's single binary: the server, the worker agent, the
// client, and the planning and simulation tools. Each subcommand lives in its
// own file; this one only wires them together.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
