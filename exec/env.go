package exec

import "github.com/toolsrv/toolsrv/registry"

// toolPATH is the PATH every tool gets: the system directories the sandbox
// lets it execute from.
const toolPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// passedThrough are taken from the server's environment when set: locale
// and time zone only.
var passedThrough = []string{"LANG", "LC_ALL", "LC_CTYPE", "TZ"}

// toolEnv is the whole environment of a tool; nothing else of the server's
// environment reaches it.
//
//	PATH                 toolPATH
//	HOME, TMPDIR         the call's private temporary directory (sandboxed);
//	                     the server's HOME when unsandboxed
//	PWD                  the working directory
//	LANG (C.UTF-8 unless set), LC_ALL, LC_CTYPE, TZ   from the server when set
//	OLLIE_TOOLS_PATH     the tool directories
//	OLLIE_BYPASS_SOCKET  when a broker is configured
//	OLLIE_SESSION_ID, OLLIE_UNAME   the caller's session and agent, when known
//	OLLIE_TOOL           the tool's name
//	TOOLSRV_BIN          Options.ClientBin, when set (the toolsrv binary, for tool_load)
//	Options.PassEnv      names the operator chose, when set
func (r *Runner) toolEnv(t *registry.Tool, cc CallContext, tmp string, sandboxed bool) []string {
	env := append(r.baseEnv(cc.WorkDir, tmp, sandboxed), "OLLIE_TOOL="+t.Name)
	if cc.ToolsPath != "" {
		env = append(env, "OLLIE_TOOLS_PATH="+cc.ToolsPath)
	}
	if r.opts.BypassSocket != "" {
		env = append(env, "OLLIE_BYPASS_SOCKET="+r.opts.BypassSocket)
	}
	if r.opts.ClientBin != "" {
		env = append(env, "TOOLSRV_BIN="+r.opts.ClientBin)
	}
	if cc.Session != "" {
		env = append(env, "OLLIE_SESSION_ID="+cc.Session)
	}
	if cc.Agent != "" {
		env = append(env, "OLLIE_UNAME="+cc.Agent)
	}
	return env
}

// baseEnv is what every process the runner starts gets (a tool, an MCP
// server): PATH, PWD (dir), HOME and TMPDIR (the private temporary
// directory tmp; the server's HOME when unsandboxed), the locale and time
// zone, and Options.PassEnv.
func (r *Runner) baseEnv(dir, tmp string, sandboxed bool) []string {
	get := r.opts.Getenv
	env := []string{"PATH=" + toolPATH, "PWD=" + dir}
	home := tmp
	if !sandboxed {
		if h := get("HOME"); h != "" {
			home = h
		}
	}
	env = append(env, "HOME="+home, "TMPDIR="+tmp)
	if get("LANG") == "" {
		env = append(env, "LANG=C.UTF-8")
	}
	for _, k := range append(append([]string(nil), passedThrough...), r.opts.PassEnv...) {
		if v := get(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}
