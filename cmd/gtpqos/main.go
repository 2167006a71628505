// Command gtpqos translates 5G QoS rules (QER GBR/MBR) held by the gtp5g
// kernel module into a Linux HTB tree, and keeps the tree in step.
//
// Subcommands live one per file and register themselves with register().
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/free5gc/gtpqos/shaper/backends"
)

// command is one gtpqos subcommand.
type command struct {
	name    string
	summary string
	// run executes the subcommand with its own arguments (after the name).
	// stdout is where results go; diagnostics go to stderr via the logger.
	run func(ctx context.Context, args []string, stdout io.Writer) error
}

var commands = map[string]command{}

// register adds a subcommand; each subcommand file calls it from init().
func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("gtpqos: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// usageError marks an error in how gtpqos was called (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: gtpqos <command> [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'gtpqos <command> -h' for a command's flags.")
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is main without os.Exit, so tests can call it.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "gtpqos: unknown command %q (try 'gtpqos help')\n", args[0])
		return 2
	}
	// Where BPF classifiers are pinned (a bpffs directory): see docs/deploy.md.
	backends.SetPinRoot(os.Getenv("GTPQOS_BPF_PIN_DIR"))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := c.run(ctx, args[1:], stdout)
	if err == nil {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "gtpqos %s: %s\n", c.name, ue.msg)
		return 2
	}
	// One line, no stack trace: the error chain names the thing at fault.
	fmt.Fprintln(stderr, err.Error())
	return 1
}
