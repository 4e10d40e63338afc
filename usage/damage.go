package usage

import "github.com/toolsrv/toolsrv/internal/sqlitefile"

// errDamaged marks a store that cannot be read as one: it is set aside
// (sqlitefile.IsDamage, the one rule for what is damage).
var errDamaged = sqlitefile.ErrDamaged

// isDamage reports whether err says the store's file is damaged (not a
// database, or a corrupt one), as opposed to busy, full, unreadable or
// gone.
func isDamage(err error) bool { return sqlitefile.IsDamage(err) }

// damagedCopies are the set-aside copies of the store at path.
func damagedCopies(path string) []string { return sqlitefile.SetAsideCopies(path) }
