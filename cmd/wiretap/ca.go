package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wiretap-dev/wiretap/capture/proxy"
)

func init() { extraCommands = append(extraCommands, newCACmd) }

func newCACmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ca",
		Short: "Show the CA with which the proxy intercepts TLS",
		Long: `ca prints where the certificate authority of 'wiretap proxy' is kept and
its SHA-256 fingerprint, making it first if there is none. The proxy issues
from it a certificate for each server name its clients ask for, so that a
client told to trust this CA (e.g. psql's sslrootcert with
sslmode=verify-full) verifies the proxy. It lives under the user's
configuration directory ($XDG_CONFIG_HOME/wiretap, else ~/.config/wiretap),
its key readable by the user alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := proxy.DefaultCADir()
			if err != nil {
				return inputErr(err)
			}
			ca, err := proxy.LoadOrCreateCA(dir)
			if err != nil {
				return inputErr(err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, "certificate:", ca.CertFile)
			fmt.Fprintln(out, "key:        ", ca.KeyFile)
			fmt.Fprintln(out, "SHA-256:    ", ca.Fingerprint())
			fmt.Fprintln(out, "subject:    ", ca.Certificate().Subject.String())
			fmt.Fprintln(out, "valid until:", ca.Certificate().NotAfter.UTC().Format("2006-01-02"))
			return nil
		},
	}
}
