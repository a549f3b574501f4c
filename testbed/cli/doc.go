// Package cli implements the pickyman command line. Each subcommand lives in its own file
// and is registered explicitly in NewRootCommand.
package cli
