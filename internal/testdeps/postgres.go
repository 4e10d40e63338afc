package testdeps

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Postgres: a PostgreSQL server (Debian's postgresql package: initdb and
// postgres in /usr/lib/postgresql/VERSION/bin).
const Postgres = "postgres"

// PostgresPassword is the password of the superuser (postgres) of a
// server StartPostgres runs.
const PostgresPassword = "toolsrv-test"

// PG is a PostgreSQL server of a test's own: a cluster in a temporary
// directory, reached by a Unix socket there only (no TCP port), password
// authentication (scram-sha-256), the superuser postgres.
type PG struct {
	// SocketDir is the directory of its socket (the URL's host).
	SocketDir string
	base      string
	data      string
	bin       string
	cred      *syscall.Credential
	cmd       *exec.Cmd
	exited    chan struct{}
	log       string
}

// postgresBin is the directory of Debian's PostgreSQL programs (the
// newest version installed), or of initdb on $PATH.
func postgresBin() (string, bool) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) < version(dirs[j]) })
	if len(dirs) > 0 {
		return filepath.Dir(dirs[len(dirs)-1]), true
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), true
	}
	return "", false
}

func version(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// StartPostgres runs a PostgreSQL server for t, stopped and removed when
// t ends. Run as root, the server runs as the user nobody (PostgreSQL
// refuses root). Missing (skips) where PostgreSQL is not installed.
func StartPostgres(t testing.TB) *PG {
	t.Helper()
	bin, ok := postgresBin()
	if !ok {
		Missing(t, Postgres, "PostgreSQL (initdb, postgres) is not installed", Install(Postgres))
		return nil
	}
	base, err := os.MkdirTemp("", "toolsrv-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	p := &PG{base: base, bin: bin, data: filepath.Join(base, "data"), SocketDir: filepath.Join(base, "sock"), log: filepath.Join(base, "log")}
	for _, d := range []string{p.data, p.SocketDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Fatalf("running as root, the PostgreSQL server needs the user nobody: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chmod(base, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{p.data, p.SocketDir} {
			if err := os.Chown(d, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	pwfile := filepath.Join(p.SocketDir, "pw")
	if err := os.WriteFile(pwfile, []byte(PostgresPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p.cred != nil {
		os.Chown(pwfile, int(p.cred.Uid), int(p.cred.Gid))
	}
	initdb := p.command(filepath.Join(bin, "initdb"), "-D", p.data, "-U", "postgres", "--pwfile", pwfile,
		"--auth", "scram-sha-256", "--no-locale", "--encoding", "UTF8", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	os.Remove(pwfile)
	p.Start(t)
	t.Cleanup(func() { p.Stop(t) })
	return p
}

// command runs name as the server's user.
func (p *PG) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = []string{"HOME=" + p.base, "PATH=/usr/bin:/bin", "LC_ALL=C"}
	// A test killed before its cleanup takes its server with it
	// (SIGQUIT: PostgreSQL's immediate shutdown).
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Setpgid: true, Pdeathsig: syscall.SIGQUIT}
	return cmd
}

// Start starts the server (again, after Stop) and waits until it takes
// connections.
func (p *PG) Start(t testing.TB) {
	t.Helper()
	if p.cmd != nil {
		t.Fatal("the PostgreSQL server is running already")
	}
	logf, err := os.OpenFile(p.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := p.command(filepath.Join(p.bin, "postgres"), "-D", p.data,
		"-c", "listen_addresses=", "-c", "unix_socket_directories="+p.SocketDir,
		"-c", "fsync=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting postgres: %v", err)
	}
	logf.Close()
	p.cmd, p.exited = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(p.exited) }()
	deadline := time.Now().Add(time.Minute)
	for {
		ready := exec.Command(filepath.Join(p.bin, "pg_isready"), "-q", "-h", p.SocketDir, "-U", "postgres")
		if ready.Run() == nil {
			return
		}
		select {
		case <-p.exited:
			p.cmd = nil
			t.Fatalf("postgres exited at start:\n%s", p.Log())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres did not take connections within a minute:\n%s", p.Log())
		}
	}
}

// Stop stops the server (a fast shutdown: sessions cut, no data lost)
// and waits until it has.
func (p *PG) Stop(t testing.TB) {
	t.Helper()
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
		t.Errorf("postgres did not stop within a minute; killed")
	}
	p.cmd = nil
}

// Log is the server's log so far.
func (p *PG) Log() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// URL is the libpq URL of database db on the server as role user with
// password (the superuser: "postgres", PostgresPassword).
func (p *PG) URL(user, password, db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password), Path: "/" + db,
		RawQuery: "host=" + url.QueryEscape(p.SocketDir)}
	return u.String()
}

// SQL runs statements as the superuser with psql, failing t on an error.
func (p *PG) SQL(t testing.TB, statements ...string) string {
	t.Helper()
	args := []string{"-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", p.SocketDir, "-U", "postgres", "-d", "postgres", "-At"}
	for _, s := range statements {
		args = append(args, "-c", s)
	}
	cmd := exec.Command(filepath.Join(p.bin, "psql"), args...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+PostgresPassword)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("psql %s: %v\n%s", strings.Join(statements, "; "), err, out)
	}
	return string(out)
}

func (p *PG) String() string { return fmt.Sprintf("PostgreSQL at %s", p.SocketDir) }
