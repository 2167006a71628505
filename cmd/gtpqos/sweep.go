package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/free5gc/gtpqos/lab/ab"
)

// runSweep runs a lab sweep and prints its table.
func runSweep(ctx context.Context, f abFlags, args []string, stdout io.Writer) error {
	o, err := f.SweepOptions(args)
	if err != nil {
		return err
	}
	log := logrus.StandardLogger()
	o.Progress = log.Infof
	t, closeTarget, err := ab.OpenSweepTarget(ctx, abHooks(log))
	if err != nil {
		return err
	}
	defer closeTarget()
	res, err := ab.Sweep(ctx, t, o)
	if res != nil && len(res.Runs) > 0 {
		if werr := ab.WriteSweepTable(stdout, res); werr != nil {
			return werr
		}
		paths, werr := ab.WriteSweepFiles(f.out, res)
		if werr != nil {
			return werr
		}
		fmt.Fprintf(stdout, "\nwrote %s\n", strings.Join(paths, ", "))
	}
	if err != nil {
		return err
	}
	if failed, n := res.Failed("packet"); failed > 0 {
		return fmt.Errorf("ab sweep: %d of %d packet-accounting checks failed (see above; results in %s)", failed, n, f.out)
	}
	return nil
}
