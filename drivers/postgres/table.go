package postgres

import (
	"errors"
	"fmt"
	"strings"
)

// DefaultTable is the lock table a Driver uses unless [WithTable] or the
// URL's lock_table parameter names another: table "locks" in schema
// "zerotal_lock", created with its schema on first use.
const DefaultTable = "zerotal_lock.locks"

// maxTableName bounds the table's name so that the longest object named
// after it ("<table>_waiters_order", "<table>_force_release") stays within
// PostgreSQL's 63-byte identifiers.
const maxTableName = 48

// maxSchemaName is PostgreSQL's identifier limit.
const maxSchemaName = 63

// ErrBadTable is wrapped by the error for a lock table name that is not
// "schema.table" made of lowercase letters, digits and underscores.
var ErrBadTable = errors.New("postgres: bad lock table name")

// table is a validated lock table name. Every object the driver creates
// lives in its schema and is named after it.
type table struct{ schema, name string }

// parseTable validates "schema.table". Names are restricted to what needs
// no quoting in SQL (lowercase ASCII letters, digits, '_', not starting
// with a digit), so that the table reads the same in psql as in the
// driver, and are quoted in every statement all the same. The schema is
// required: an unqualified name would follow each session's search_path,
// and two processes with different search paths would not share locks.
func parseTable(s string) (table, error) {
	schema, name, ok := strings.Cut(s, ".")
	if !ok {
		return table{}, fmt.Errorf("%w %q: want schema.table, e.g. %q (an unqualified name would depend on each session's search_path)", ErrBadTable, s, DefaultTable)
	}
	if err := checkIdent("schema", schema, maxSchemaName); err != nil {
		return table{}, fmt.Errorf("%w %q: %w", ErrBadTable, s, err)
	}
	if strings.HasPrefix(schema, "pg_") {
		return table{}, fmt.Errorf("%w %q: schema names starting with pg_ are reserved by PostgreSQL", ErrBadTable, s)
	}
	if err := checkIdent("table", name, maxTableName); err != nil {
		return table{}, fmt.Errorf("%w %q: %w", ErrBadTable, s, err)
	}
	return table{schema: schema, name: name}, nil
}

// checkIdent checks one part of a table name.
func checkIdent(what, s string, maxLen int) error {
	switch {
	case s == "":
		return fmt.Errorf("the %s name is empty", what)
	case len(s) > maxLen:
		return fmt.Errorf("the %s name is %d bytes long; at most %d", what, len(s), maxLen)
	case s[0] >= '0' && s[0] <= '9':
		return fmt.Errorf("the %s name starts with a digit", what)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return fmt.Errorf("the %s name has %q at byte %d; use lowercase letters, digits and '_'", what, rune(c), i)
		}
	}
	return nil
}

// String returns "schema.table".
func (t table) String() string { return t.schema + "." + t.name }

// quoted returns the table as a quoted, qualified SQL name.
func (t table) quoted() string { return quoteIdent(t.schema) + "." + quoteIdent(t.name) }

// object returns the quoted, qualified name of the object "<table>_suffix"
// in the table's schema.
func (t table) object(suffix string) string {
	return quoteIdent(t.schema) + "." + quoteIdent(t.name+"_"+suffix)
}

// quoteIdent quotes a validated identifier (one with no '"' to double).
func quoteIdent(s string) string { return `"` + s + `"` }
