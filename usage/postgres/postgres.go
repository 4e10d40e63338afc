package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolsrv/toolsrv/internal/fileio"
	"github.com/toolsrv/toolsrv/internal/statedir"
	"github.com/toolsrv/toolsrv/usage"
)

func init() {
	usage.Register("postgres", Open)
	usage.Register("postgresql", Open)
}

// Timeouts of the calls to the server: a server that does not answer
// within them is taken as down (events spooled, the local copy served).
const (
	connectTimeout = 3 * time.Second
	opTimeout      = 10 * time.Second
	retryEvery     = 500 * time.Millisecond
)

// store is a usage store in a PostgreSQL database, for one namespace.
type store struct {
	pool    *pgxpool.Pool
	cfg     *pgxpool.Config
	opts    usage.Options
	ns      string
	channel string // the LISTEN/NOTIFY channel of ns
	where   string // the URL without its password, and the namespace
	user    string
	local   *local
	// in is this instance's identity in the namespace (principal.go).
	in ident

	// schema: whether the tables were checked (or made) on this server;
	// a layout error found once is kept.
	schemaMu  sync.Mutex
	schemaOK  bool
	schemaErr error

	// The view: the namespace's entries as last read, kept up to date
	// by catchUp and saved in local.
	viewMu      sync.Mutex
	view        map[usage.Key]usage.Entry
	viewVersion int64
	// seen: when this instance first read each entry another wrote that
	// is not in the view yet (read by Changes for a reader ahead of or
	// behind the view): what dates it (dated) until the view holds it.
	seen map[usage.Key]time.Time

	spooling atomic.Bool   // events go to the spool first (the server was down, or the spool is not empty)
	down     atomic.Bool   // the last call to the server failed for want of it
	wake     chan struct{} // Notify's channel
	flushNow chan struct{}
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	refused  atomic.Bool // the server refused the spool (said once)

	// held are the events the spool could not take (a full disk, an I/O
	// error), oldest first, all recorded after those in the spool: they
	// go to the spool, or to the server, as soon as either takes them.
	heldMu   sync.Mutex
	held     []pending
	heldSaid bool        // the first one was logged
	closed   atomic.Bool // Close was called
	shut     atomic.Bool // Close is done with the server
}

// Open is the driver of postgres:// and postgresql:// URLs (any libpq
// URL; what it leaves out comes from the PG* environment variables, as
// with psql). It never fails for a server that is down: the store then
// ranks from its local copy and spools events until the server is back
// (told in the warnings). It fails for a layout newer than this toolsrv
// knows, and for a namespace the role may not use.
func Open(ctx context.Context, dsn string, opts usage.Options) (usage.Store, []string, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("usage store: the PostgreSQL URL %s: %w", redact(dsn), redactErr(err, dsn))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > connectTimeout {
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "toolsrv"
	}
	user := cfg.ConnConfig.User
	ns := opts.Namespace
	if ns == "" {
		ns = user
	}
	if ns == "" {
		return nil, nil, errors.New("usage store: no namespace: give --usage-namespace, or a user in the PostgreSQL URL")
	}
	s := &store{
		cfg: cfg, opts: opts, ns: ns, user: user,
		channel:  channelOf(ns),
		where:    fmt.Sprintf("%s (namespace %s)", redact(dsn), ns),
		view:     map[usage.Key]usage.Entry{},
		seen:     map[usage.Key]time.Time{},
		wake:     make(chan struct{}, 1),
		flushNow: make(chan struct{}, 1),
	}
	dir := opts.LocalDir
	if dir == "" {
		dir = filepath.Join(statedir.Dir(os.Getenv), "shared")
	}
	key := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%s\x00%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database, ns)))
	var warnings []string
	warn := func(msg string) { warnings = append(warnings, msg) }
	path := filepath.Join(dir, hex.EncodeToString(key[:8])+".db")
	s.local = newLocal(path, opts.Now, opts.Logger)
	// The local file is a copy and a queue: one SQLite cannot read is set
	// aside and made anew (sqlitefile.IsDamage, with a warning); one that
	// cannot be opened or read now (a full disk, an I/O error) is left as
	// it is, holding its unsent calls: the store ranks from the server
	// meanwhile, keeps in memory what it cannot spool, and tries the file
	// again at each call.
	err = fileio.PrivateDir(dir, os.Geteuid(), fileio.WarnLogger(warn))
	if errors.Is(err, fileio.ErrNotPrivate) {
		return nil, warnings, fmt.Errorf("usage store: the local copy: %w", err)
	}
	if err == nil {
		err = s.local.open(ctx, warn)
	}
	// This instance's key (principal.go). Without it (the directory
	// unwritable now) this process seals with a key of its own: what it
	// records is then, to later processes, another instance's.
	ikey, kerr := usage.InstanceKey(dir)
	if kerr != nil {
		ikey = make([]byte, 32)
		rand.Read(ikey)
		warn(fmt.Sprintf("%v: this process's calls are recorded under a key of its own, which later ones will take as another instance's", kerr))
	}
	s.in = ident{key: ikey, id: usage.InstanceID(ikey), ns: ns}
	if err == nil {
		s.view, s.viewVersion, err = s.local.loadView(ctx)
	}
	if err != nil {
		s.view, s.viewVersion = map[usage.Key]usage.Entry{}, 0
		warn(fmt.Sprintf("%v: cannot be used now; calls the server cannot take are kept in memory until it can", err))
	}
	if n, _, err := s.local.pending(ctx); err == nil && n > 0 {
		s.spooling.Store(true)
	}
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		s.local.Close()
		return nil, warnings, fmt.Errorf("usage store %s: %w", s.where, err)
	}
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	err = s.ensure(octx)
	cancel()
	switch {
	case err == nil:
	case isDown(err):
		s.down.Store(true)
		warnings = append(warnings, fmt.Sprintf("the shared usage store %s is unreachable (%v): ranking from the local copy (%d entries); calls are kept locally and sent when it is back",
			s.where, redactErr(err, dsn), len(s.view)))
	default:
		s.pool.Close()
		s.local.Close()
		return nil, warnings, fmt.Errorf("usage store %s: %w", s.where, redactErr(err, dsn))
	}
	bg, cancelBG := context.WithCancel(context.Background())
	s.cancel = cancelBG
	s.wg.Add(2)
	go func() { defer s.wg.Done(); s.listen(bg) }()
	go func() { defer s.wg.Done(); s.flushLoop(bg) }()
	return s, warnings, nil
}

// channelOf is the LISTEN/NOTIFY channel of namespace ns (an identifier
// of at most 63 bytes, whatever ns is).
func channelOf(ns string) string {
	h := sha256.Sum256([]byte(ns))
	return "toolsrv_usage_" + hex.EncodeToString(h[:12])
}

// ensure checks (once) that the tables are laid out at this toolsrv's
// layout, making or migrating them when needed, and that this role may
// use the namespace.
func (s *store) ensure(ctx context.Context) error {
	s.schemaMu.Lock()
	defer s.schemaMu.Unlock()
	if s.schemaOK {
		return nil
	}
	if s.schemaErr != nil {
		return s.schemaErr
	}
	err := ensureSchema(ctx, s.pool, s.user)
	if err == nil {
		err = s.checkNamespace(ctx)
	}
	var se schemaError
	if errors.As(err, &se) {
		s.schemaErr = err
	}
	if err == nil {
		s.schemaOK = true
		s.down.Store(false)
	}
	return err
}

// checkNamespace fails when the row-level security policies keep this
// role from the namespace: one not owning the tables, not a superuser and
// not exempt (BYPASSRLS) uses the namespace of its own name only.
func (s *store) checkNamespace(ctx context.Context) error {
	var bound bool
	err := s.pool.QueryRow(ctx, `SELECT NOT (r.rolsuper OR r.rolbypassrls OR pg_has_role(current_user, c.relowner, 'USAGE'))
		FROM pg_roles r, pg_class c WHERE r.rolname = current_user AND c.oid = 'toolsrv_usage_entries'::regclass`).Scan(&bound)
	if err != nil {
		return err
	}
	var me string
	if err := s.pool.QueryRow(ctx, `SELECT current_user`).Scan(&me); err != nil {
		return err
	}
	if bound && me != s.ns {
		return schemaError{fmt.Errorf("role %s may use namespace %s only (the row-level security policies tie a role to the namespace of its name), not %s: drop --usage-namespace, or connect as role %s",
			me, me, s.ns, s.ns)}
	}
	return nil
}

// isDown reports whether err says the server could not be reached or
// answered that it cannot serve now (rather than refusing the request).
func isDown(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var se schemaError
	if errors.As(err, &se) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "53"), strings.HasPrefix(pe.Code, "57P"):
			return true
		}
		return false
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || pgconn.SafeToRetry(err) || strings.Contains(err.Error(), "conn closed")
}

// redact is dsn without its password.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(a PostgreSQL URL)"
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	if q.Has("password") {
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// redactErr is err with dsn's password taken out of its text.
func redactErr(err error, dsn string) error {
	if err == nil {
		return nil
	}
	pw := ""
	if u, perr := url.Parse(dsn); perr == nil {
		if u.User != nil {
			pw, _ = u.User.Password()
		}
		if pw == "" {
			pw = u.Query().Get("password")
		}
	}
	if pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), pw, "xxxxx"))
}

// Notify wakes a reader when the store may have changed: another instance
// recorded (LISTEN/NOTIFY), or the server is back.
func (s *store) Notify() <-chan struct{} { return s.wake }

func (s *store) signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Close stops following the server, tries once to send what is spooled
// and held, spools what it could not send, and releases the store. Calls
// that neither the server nor the spool took are lost: Close says how
// many (logged, and its error).
func (s *store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.cancel()
	s.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if s.spooling.Load() && !s.down.Load() {
		s.flush(ctx)
	}
	err := s.spoolHeld(ctx)
	if err != nil {
		err = fmt.Errorf("%w; they are lost", err)
		s.opts.Logger.Error("usage calls lost: neither the shared store nor the local spool took them", "err", err)
	}
	s.shut.Store(true)
	s.pool.Close()
	if cerr := s.local.Close(); err == nil {
		err = cerr
	}
	return err
}

// tx runs fn in a transaction on the server, after ensure, within
// opTimeout. A failure for want of the server marks it down.
func (s *store) tx(ctx context.Context, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	return s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error { return pgx.BeginTxFunc(ctx, c, opts, fn) })
}

// withConn runs fn with a connection to the server, after ensure, within
// opTimeout. A failure for want of the server marks it down.
func (s *store) withConn(ctx context.Context, fn func(context.Context, *pgxpool.Conn) error) error {
	if s.shut.Load() {
		return errors.New("usage store: closed")
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	err := s.ensure(ctx)
	if err == nil {
		var c *pgxpool.Conn
		if c, err = s.pool.Acquire(ctx); err == nil {
			err = fn(ctx, c)
			c.Release()
		}
	}
	if isDown(err) {
		s.down.Store(true)
	} else if err == nil || errors.Is(err, usage.ErrResnapshot) {
		s.down.Store(false)
	}
	return err
}

// readTx are the options of a read: one consistent view.
var readTx = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
