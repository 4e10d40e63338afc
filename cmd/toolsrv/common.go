package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/toolsrv/toolsrv/registry"
)

// dirList is a repeatable --tools flag; "a:b" also splits.
type dirList []string

func (d *dirList) String() string { return strings.Join(*d, ":") }
func (d *dirList) Set(v string) error {
	for _, p := range strings.Split(v, ":") {
		if p != "" {
			*d = append(*d, p)
		}
	}
	return nil
}

// newFlags makes a subcommand's flag set with the flags every subcommand
// shares (--tools, and -h/--help for the full help on standard output).
// usage is the synopsis printed by --help and after a usage error; about is
// the rest of the help text.
func newFlags(env *cliEnv, name, usage, about string) (*flag.FlagSet, *dirList) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	tools := &dirList{}
	fs.Var(tools, "tools", "tool directory (repeatable, or colon separated); overrides $OLLIE_TOOLS_PATH")
	help := &helpFlag{print: func() { printHelp(env.stdout, fs, synopsis(fs, usage), about) }}
	fs.Var(help, "h", "print this help")
	fs.Var(help, "help", "print this help")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: toolsrv %s\nRun \"toolsrv %s --help\" for the flags.\n", synopsis(fs, usage), name)
	}
	return fs, tools
}

// synopsis is a subcommand's usage line with every flag in it: the
// hand-written usage, then the flags it does not name, so that a flag
// added to the command can never be missing from its usage line.
func synopsis(fs *flag.FlagSet, usage string) string {
	var rest []string
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := f.Value.(*helpFlag); ok || namesFlag(usage, f.Name) {
			return
		}
		rest = append(rest, flagSynopsis(f))
	})
	if len(rest) == 0 {
		return usage
	}
	const indent, width = "       ", 100
	var b strings.Builder
	b.WriteString(usage)
	line := indent + "other flags:"
	for _, r := range rest {
		if len(line)+1+len(r) > width {
			b.WriteString("\n" + line)
			line = indent + " "
		}
		line += " " + r
	}
	b.WriteString("\n" + line)
	return b.String()
}

// namesFlag says whether usage mentions flag name as -name or --name.
func namesFlag(usage, name string) bool {
	for _, dash := range []string{"--", "-"} {
		for i := 0; ; {
			j := strings.Index(usage[i:], dash+name)
			if j < 0 {
				break
			}
			start, end := i+j, i+j+len(dash)+len(name)
			before := start == 0 || strings.ContainsRune(" [|(", rune(usage[start-1]))
			after := end == len(usage) || strings.ContainsRune(" ]|)=\n", rune(usage[end]))
			if before && after {
				return true
			}
			i = end
		}
	}
	return false
}

// flagSynopsis is "[--name VALUE]" ("[--name]" for a boolean flag; one
// letter flags take one dash). VALUE is the flag's type for numbers and
// durations, else the last word of its name (--usage-db DB).
func flagSynopsis(f *flag.Flag) string {
	dash := "--"
	if len(f.Name) == 1 {
		dash = "-"
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "[" + dash + f.Name + "]"
	}
	arg, _ := flag.UnquoteUsage(f)
	switch {
	case f.Name == "tools":
		arg = "dir"
	case arg == "" || arg == "string" || arg == "value":
		arg = f.Name[strings.LastIndex(f.Name, "-")+1:]
	}
	return "[" + dash + f.Name + " " + strings.ToUpper(arg) + "]"
}

// helpFlag is -h and --help: it asks for the full help on standard output.
type helpFlag struct {
	asked bool
	print func()
}

func (h *helpFlag) String() string   { return "false" }
func (h *helpFlag) IsBoolFlag() bool { return true }
func (h *helpFlag) Set(v string) error {
	b, err := strconv.ParseBool(v)
	h.asked = h.asked || b
	return err
}

// printHelp writes a subcommand's full help: synopsis, text and flags.
func printHelp(w io.Writer, fs *flag.FlagSet, usage, about string) {
	fmt.Fprintf(w, "Usage: toolsrv %s\n\n%s\n\nFlags go anywhere among the arguments; -- ends them (for an argument that begins with -).\n", usage, about)
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := f.Value.(*helpFlag); ok {
			return
		}
		shown.Var(f.Value, f.Name, f.Usage)
		shown.Lookup(f.Name).DefValue = f.DefValue
	})
	shown.SetOutput(w)
	shown.PrintDefaults()
}

// parseFlags parses args, flags anywhere among the positional arguments
// ("--" ends the flags); afterwards fs.Args() are the positional arguments
// in order. It returns (exit status, false) when the command should stop:
// 0 after --help (printed on standard output), 2 after a usage error
// (printed on standard error with the synopsis).
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	flagArgs, positional := splitArgs(fs, args)
	out, usage := fs.Output(), fs.Usage
	// The flag package prints its error before the usage; we print both,
	// the error first and prefixed with the command.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(flagArgs)
	fs.SetOutput(out)
	fs.Usage = usage
	if err != nil {
		fmt.Fprintf(out, "toolsrv %s: %v\n", fs.Name(), err)
		usage()
		return 2, false
	}
	if h, ok := fs.Lookup("help").Value.(*helpFlag); ok && h.asked {
		h.print()
		return 0, false
	}
	// Parsing "--" then the positional arguments leaves them in fs.Args().
	if err := fs.Parse(append([]string{"--"}, positional...)); err != nil {
		return 2, false
	}
	return 0, true
}

// splitArgs separates the flags of fs (with their values) from the
// positional arguments, wherever they appear. "-" is positional; "--" makes
// everything after it positional. A flag fs does not define is passed on
// as a flag, so that Parse reports it.
func splitArgs(fs *flag.FlagSet, args []string) (flags, positional []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, append(positional, args[i+1:]...)
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) { // the flag's value, whatever it looks like
			i++
			flags = append(flags, args[i])
		}
	}
	return flags, positional
}

// usageError prints a usage error of command name (message, then the
// synopsis) on standard error and returns exit status 2.
func usageError(fs *flag.FlagSet, format string, a ...any) int {
	fmt.Fprintf(fs.Output(), "toolsrv %s: %s\n", fs.Name(), fmt.Sprintf(format, a...))
	fs.Usage()
	return 2
}

// logger is the CLI's logger: env.log when the command set one, else
// warnings and errors on stderr.
func logger(env *cliEnv) *slog.Logger {
	if env.log != nil {
		return env.log
	}
	return loggerAt(env, slog.LevelWarn)
}

// loggerAt logs records of level and above on stderr.
func loggerAt(env *cliEnv, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: level}))
}

// verbosity is the repeatable -v flag: -v logs at Info, -v -v (or -v=2)
// at Debug.
type verbosity int

func (v *verbosity) String() string   { return strconv.Itoa(int(*v)) }
func (v *verbosity) IsBoolFlag() bool { return true }
func (v *verbosity) Set(s string) error {
	if b, err := strconv.ParseBool(s); err == nil {
		if b {
			*v++
		} else {
			*v = 0
		}
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("want -v, -v -v or -v=N (N ≥ 0)")
	}
	*v = verbosity(n)
	return nil
}

// level is the log level -v asks for; quiet is the level without -v.
func (v verbosity) level(quiet slog.Level) slog.Level {
	switch {
	case v <= 0:
		return quiet
	case v == 1:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// lookupHint is what to add to a catalog lookup error on the command line:
// for a name no .meta defines, how to see what there is.
func lookupHint(err error) string {
	var le *registry.LookupError
	if errors.As(err, &le) && !le.Hidden() {
		return `; "toolsrv ls" lists the tools, "toolsrv validate" shows broken .meta files`
	}
	return ""
}
