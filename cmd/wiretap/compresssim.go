package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/pcapng"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
	"github.com/wiretap-dev/wiretap/decode/pgwire/compsim"
	"github.com/wiretap-dev/wiretap/pipeline"
)

func init() { extraCommands = append(extraCommands, newCompressSimCmd) }

func newCompressSimCmd() *cobra.Command {
	var (
		f        decodeFlags
		writeTo  string
		algo     string
		messages int
		txFrame  bool
		mss      int
	)
	cmd := &cobra.Command{
		Use:   "compress-sim FILE",
		Short: "What-if: PostgreSQL protocol compression applied to a capture",
		Long: `compress-sim replays the PostgreSQL connections of a capture through the
protocol-compression proposal's encoder (CompressedMessages, 'z') and
prints, per connection and in total, the backend bytes on the wire with no
compression, lz4 and zstd, for 1, 2, 3, 2000 and unbounded messages per
CompressedMessages, each without and with one compression frame per
transaction.

--write OUT writes the capture re-encoded with one configuration
(--algorithm, --messages, --tx-frame) as a pcapng of synthesised TCP,
which tshark and 'wiretap read' open.`,
		Example: `  wiretap compress-sim testdata/pgsql-libpq.pcapng
  wiretap compress-sim pg.pcapng --write pg-zstd.pcapng --algorithm zstd --messages 0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return err
			}
			var a byte
			switch algo {
			case "zstd":
				a = pgwire.CompressionZstd
			case "lz4":
				a = pgwire.CompressionLZ4
			default:
				return usageErr("--algorithm %q: want zstd or lz4", algo)
			}
			if messages < 0 {
				return usageErr("--messages %d: want 0 (unbounded) or more", messages)
			}
			if mss < 0 || mss > 65000 {
				return usageErr("--mss %d: want 1 to 65000 (0: 1460)", mss)
			}
			return runCompressSim(args[0], &f, writeTo, mss, compsim.Config{Algorithm: a, MessagesPer: messages, TxFrame: txFrame})
		},
	}
	cmd.Flags().StringVarP(&writeTo, "write", "w", "", "write the re-encoded capture to this pcapng file")
	cmd.Flags().StringVar(&algo, "algorithm", "zstd", "--write: zstd or lz4")
	cmd.Flags().IntVar(&messages, "messages", 0, "--write: messages per CompressedMessages (0: unbounded)")
	cmd.Flags().BoolVar(&txFrame, "tx-frame", false, "--write: end the compression frame at each transaction end")
	cmd.Flags().IntVar(&mss, "mss", 0, "--write: largest TCP payload per packet (default 1460); small values split messages across many segments")
	f.registerInput(cmd) // its output is its own table: no --format, --filter, --raw
	return cmd
}

func runCompressSim(path string, f *decodeFlags, writeTo string, mss int, wcfg compsim.Config) error {
	var (
		col   compsim.Collector
		units []*decode.Unit
	)
	decodeAs, _ := f.decodeAsMap()
	opt := f.options()
	opt.ShowSecrets = true // the rewrite must carry the real bytes
	pl := pipeline.New(pipeline.Config{Options: opt, DecodeAs: decodeAs, Sink: func(u *decode.Unit) {
		if u.Proto != decode.ProtoPgSQL || (f.conn != 0 && u.Conn.ID != f.conn) {
			return
		}
		col.Add(u)
		if writeTo != "" && u.Parent == nil {
			units = append(units, u)
		}
	}})
	stats, err := capture.ReadFile(path, pl, nil)
	if err != nil && (errors.Is(err, capture.ErrNotCapture) || stats == nil) {
		return inputErr(err)
	}
	pl.Finish()
	ids, msgs := col.Conns()
	if len(ids) == 0 {
		if f.conn != 0 {
			return inputErr(fmt.Errorf("no PostgreSQL backend messages in connection %d of %s (it has %s)", f.conn, path, plural(len(pl.Conns()), "connection")))
		}
		return inputErr(fmt.Errorf("no PostgreSQL backend messages in %s", path))
	}
	res, err := compsim.Simulate(msgs, compsim.StandardConfigs())
	if err != nil {
		return inputErr(err)
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, "PostgreSQL backend bytes on the wire, %s (%s)\n", path, plural(len(ids), "connection"))
	if err := compsim.WriteTable(out, ids, res); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if writeTo != "" {
		if err := writeCompressed(writeTo, units, mss, wcfg); err != nil {
			return inputErr(err)
		}
		fmt.Fprintf(os.Stderr, "wiretap: wrote %s (%v)\n", writeTo, wcfg)
	}
	return nil
}

// writeCompressed re-encodes each connection's backend messages with cfg
// and writes both directions as synthesised TCP, keeping each unit's time.
func writeCompressed(path string, units []*decode.Unit, mss int, cfg compsim.Config) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	bw := bufio.NewWriterSize(fh, 256<<10)
	pw := pcapng.NewWriter(bw)
	syn := pcapng.NewSynth(pw)
	syn.MSS = mss
	type state struct {
		flow *capture.Flow
		enc  *compsim.Encoder
	}
	conns := map[*decode.Conn]*state{}
	var order []*state
	var buf []byte
	for _, u := range units {
		st := conns[u.Conn]
		if st == nil {
			enc, err := compsim.NewEncoder(cfg)
			if err != nil {
				return err
			}
			st = &state{flow: &capture.Flow{ID: len(conns) + 1, A: u.Conn.Client, B: u.Conn.Server, SYN: true, First: u.Time()}, enc: enc}
			conns[u.Conn] = st
			order = append(order, st)
		}
		if u.Dir == decode.DirF {
			syn.Data(st.flow, true, u.Raw, u.Time())
			continue
		}
		m := compsim.Message{Raw: u.Raw}
		if u.Type == "ReadyForQuery" && len(u.Raw) == 6 && u.Raw[5] == 'I' {
			m.TxEnd = true
		}
		buf = st.enc.Write(buf[:0], m)
		if err := st.enc.Err(); err != nil {
			return fmt.Errorf("compress-sim: connection %d: %w", u.Conn.ID, err)
		}
		if len(buf) > 0 {
			syn.Data(st.flow, false, buf, u.Time())
		}
	}
	last := units[len(units)-1].Time()
	for _, st := range order {
		if buf = st.enc.Close(buf[:0]); len(buf) > 0 {
			syn.Data(st.flow, false, buf, last)
		}
		syn.Close(st.flow, last)
	}
	if err := syn.Err(); err != nil {
		return err
	}
	if err := pw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}
