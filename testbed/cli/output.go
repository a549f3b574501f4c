package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Output formats of the -o flag.
const (
	outputText = "text"
	outputJSON = "json"
)

// outputFormats lists the values -o accepts, the default first.
var outputFormats = []string{outputText, outputJSON}

// outputFlag is the -o/--output flag of the commands that print a result a script may read.
type outputFlag struct{ format string }

// register adds -o/--output to cmd, with completion of its values.
func (o *outputFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.format, "output", "o", outputText, "output format: "+strings.Join(outputFormats, " or "))
	must(cmd.RegisterFlagCompletionFunc("output", fixedCompletions(outputFormats)))
}

// validate fails on a value -o does not know, naming the ones it does.
func (o *outputFlag) validate() error {
	for _, f := range outputFormats {
		if o.format == f {
			return nil
		}
	}
	return fmt.Errorf("-o %q: unknown output format (want %s)", o.format, strings.Join(outputFormats, " or "))
}

// json reports whether the output is JSON.
func (o *outputFlag) json() bool { return o.format == outputJSON }

// writeJSON writes v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
