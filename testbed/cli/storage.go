package cli

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pickyman/pickyman/testbed/storage"
)

func newStorageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "storage",
		Short: "The testbed's dataset store: an HTTP object server of generated datasets, paced per reader",
	}
	cmd.AddCommand(newStorageServeCommand())
	return cmd
}

func newStorageServeCommand() *cobra.Command {
	var (
		dir, listen, addrFile, rate string
		datasets                    []string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Generate the datasets that are missing and serve the directory's objects over HTTP until stopped",
		Long: "Generate the datasets that are missing in --dir (the same name and size give the same bytes\n" +
			"everywhere) and serve every regular file of --dir: GET and HEAD of http://ADDR/KEY, byte ranges\n" +
			"and ETags. Each response is paced to the object's rate (--dataset NAME=SIZE@RATE), or to --rate,\n" +
			"standing in for the storage network's share of one reader. SIGINT or SIGTERM stops it; it then\n" +
			"prints the requests it answered and the bytes it sent.",
		Example: `  pickyman storage serve --dir /srv/datasets --listen 10.244.0.1:9000 --dataset imagenet-mini=256Mi@8Mi
  pickyman storage serve --dir data --listen 127.0.0.1:0 --addr-file data.addr --rate 16Mi`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return fmt.Errorf("--dir: the directory of the objects is required")
			}
			ds := make([]storage.Dataset, len(datasets))
			for i, spec := range datasets {
				d, err := storage.ParseDataset(spec)
				if err != nil {
					return fmt.Errorf("--dataset: %w", err)
				}
				ds[i] = d
			}
			def, err := storage.ParseRate(rate)
			if err != nil {
				return fmt.Errorf("--rate: %w", err)
			}
			if err := storage.Prepare(dir, ds); err != nil {
				return err
			}
			l, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen: %w", err)
			}
			addr := l.Addr().String()
			if addrFile != "" {
				// Written once the server listens, through a rename: a reader never sees half.
				tmp := addrFile + ".tmp"
				if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o644); err != nil {
					_ = l.Close()
					return err
				}
				if err := os.Rename(tmp, addrFile); err != nil {
					_ = l.Close()
					return err
				}
			}
			abs, _ := filepath.Abs(dir)
			fmt.Fprintf(cmd.ErrOrStderr(), "serving %s on http://%s/ (%d datasets prepared)\n", abs, addr, len(ds))
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			srv := &storage.Server{Dir: dir, Rate: def, Rates: storage.Rates(ds)}
			start := time.Now()
			err = storage.Serve(ctx, l, srv)
			fmt.Fprintf(cmd.ErrOrStderr(), "stopped after %v: %d requests answered, %d bytes sent\n",
				time.Since(start).Round(time.Second), srv.Requests(), srv.Sent())
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "dir", "", "directory of the objects (created if missing)")
	fl.StringVar(&listen, "listen", "127.0.0.1:9000", "address to listen on, HOST:PORT (port 0: any free port; see --addr-file)")
	fl.StringVar(&addrFile, "addr-file", "", "write the address listened on to this file once the server listens")
	fl.StringVar(&rate, "rate", "0", "pace of each response in bytes per second, a quantity such as 8Mi (0: unpaced); a dataset's own @RATE wins")
	fl.StringArrayVar(&datasets, "dataset", nil, "a dataset to generate if missing, NAME=SIZE[@RATE] (quantities: 40Mi, 1Gi; RATE in bytes per second), repeatable")
	return cmd
}
