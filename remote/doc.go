// Package remote reaches toolsrv on other machines through OpenSSH, and
// federates them: a remote toolsrv's tools join the local catalog, ranked
// with the local ones, and run there.
//
// # Reaching a remote toolsrv
//
// Dial connects to ssh:[USER@]HOST[:PORT] by running the system's ssh
// (its configuration, keys and agent apply; $TOOLSRV_SSH_COMMAND replaces
// "ssh" as $GIT_SSH_COMMAND does for git) with the remote command
// "toolsrv serve --stdio" ($TOOLSRV_REMOTE_CMD or DialOptions.RemoteCmd
// replaces "toolsrv"), and speaks 9P over its standard input and output.
// There, Relay (toolsrv serve --stdio) carries the connection to that
// user's running server on its Unix socket, starting one if there is
// none, so sessions, agents and sent definitions outlive the connection.
// Dial checks /version (ninep.Protocol) and fails with a DialError that
// says which side failed: ssh could not run here (ErrNoSSH) or connect
// (ErrSSH, its exit status 255), toolsrv is missing there (ErrNoToolsrv,
// 127), the remote toolsrv failed (ErrRemote), the remote answered
// something that is not 9P (ErrNot9P), nothing came in time (ErrTimeout:
// DialOptions.Timeout bounds everything until the version is read), or
// the versions differ (ErrVersion).
//
// # Federation
//
// A Provider is one remote toolsrv as an engine.Provider. It keeps one
// session there (Options.Session, default "federation-HOSTNAME"), sends
// the .meta files of a local directory into it if asked (Options.Tools:
// the remote resolves them against its own host, and they join that
// session's catalog; a definition whose command is the executable beside
// it cannot be sent and is reported), and publishes the session's catalog
// (session/S/tools.json) as NAME:TOOL: the remote's own tools and the
// sent ones, with their text, so the local index ranks them beside the
// local tools with the local embedder (and its cache). Tools the remote
// itself has from a federation are not passed on (that could loop). It
// reads the session's revision every Options.Poll and publishes again when
// it moves. A call of NAME:TOOL is loaded and called as agent
// Options.Agent ("federation") of that session there: it runs on the
// remote host, in the remote's sandbox, in the remote session's working
// directory. When the connection drops, the tools are published as
// unavailable (listed as hidden with the reason, left out of ranking) and
// the provider reconnects with backoff (Options.MinBackoff doubling to
// MaxBackoff); the local catalog never waits for it.
//
// # Who may do what
//
// Everything runs as the ssh user on the remote host, and only what that
// user's toolsrv allows: sending definitions needs a connection the
// operating system authenticated (toolsrv serve --stdio is one, reaching
// the server through its Unix socket as its own user; TCP is not), and a
// forwarded call is a call of that server, in its sandbox, limited by its
// profile of Options.Agent if there is one.
package remote
