package sql

import (
	"errors"
	"strings"
	"sync"

	pgquery "github.com/wasilibs/go-pgquery"
	pgparser "github.com/wasilibs/go-pgquery/parser"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// The parser: PostgreSQL's own grammar (libpg_query, run as WebAssembly by wazero: pure
// Go, no cgo), behind this one file. Lockstep's dialect adds two things PostgreSQL does
// not have, handled on the token stream of PostgreSQL's own scanner before parsing,
// without changing any byte offset (so every location still points into the user's text):
//
//   - CREATE STREAM name (...) is parsed as CREATE TABLE: the word STREAM is replaced by
//     TABLE and a space, and the statement remembered as a stream;
//   - a trailing EMIT CHANGES or EMIT ON WINDOW CLOSE of a statement is blanked out and
//     remembered as the statement's emit mode.

// statement is one parsed statement with what the dialect added.
type statement struct {
	node   *pg.Node
	start  int32 // byte offset of the statement
	stream bool  // CREATE STREAM
	emit   string
	emitAt int32 // byte offset of EMIT, -1 if none
}

// parserMu serialises calls into the parser. go-pgquery keeps a pool of WebAssembly
// instances and, when the pool is empty, makes a new one by compiling libpg_query again
// with a cache of its own: seconds of CPU (tens under -race) each time. Parsing happens only
// at deploy time, so one instance, compiled once per process, is all it needs.
var parserMu sync.Mutex

// parse parses the script text into statements.
func parse(src *source) ([]statement, error) {
	parserMu.Lock()
	defer parserMu.Unlock()
	text := []byte(src.text)
	scan, err := pgquery.Scan(src.text)
	if err != nil {
		return nil, src.pgError(err)
	}
	var toks []*pg.ScanToken
	for _, t := range scan.GetTokens() {
		if t.Token != pg.Token_SQL_COMMENT && t.Token != pg.Token_C_COMMENT {
			toks = append(toks, t)
		}
	}
	word := func(i int) string {
		if i < 0 || i >= len(toks) {
			return ""
		}
		return strings.ToLower(src.text[toks[i].Start:toks[i].End])
	}
	streams := map[int32]bool{} // statements' CREATE offsets
	type emit struct {
		at   int32
		mode string
	}
	var emits []emit
	for i := range toks {
		if toks[i].Token == pg.Token_CREATE && word(i+1) == "stream" {
			s := toks[i+1]
			copy(text[s.Start:s.End], "TABLE ")
			streams[toks[i].Start] = true
		}
		if word(i) != "emit" {
			continue
		}
		var n int
		switch {
		case word(i+1) == "changes":
			n = 2
		case word(i+1) == "on" && word(i+2) == "window" && word(i+3) == "close":
			n = 4
		default:
			continue
		}
		if end := i + n; end < len(toks) && toks[end].Token != pg.Token_ASCII_59 {
			continue // not at the end of a statement: leave it to the grammar
		}
		mode := "changes"
		if n == 4 {
			mode = "close"
		}
		emits = append(emits, emit{toks[i].Start, mode})
		for k := i; k < i+n; k++ {
			for j := toks[k].Start; j < toks[k].End; j++ {
				text[j] = ' '
			}
		}
	}
	tree, err := pgquery.Parse(string(text))
	if err != nil {
		return nil, src.pgError(err)
	}
	var out []statement
	for _, raw := range tree.GetStmts() {
		st := statement{node: raw.Stmt, start: raw.StmtLocation, emitAt: -1}
		end := int32(len(text))
		if raw.StmtLen > 0 {
			end = raw.StmtLocation + raw.StmtLen
		}
		for at := range streams {
			if at >= raw.StmtLocation && at < end {
				st.stream = true
			}
		}
		for _, e := range emits {
			if e.at >= raw.StmtLocation && e.at < end {
				st.emit, st.emitAt = e.mode, e.at
			}
		}
		// The statement proper starts at its first token, not at the white space and
		// comments after the previous semicolon.
		for _, t := range toks {
			if t.Start >= raw.StmtLocation {
				st.start = t.Start
				break
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// pgError turns a parser error into an ErrSyntax Error at its place.
func (s *source) pgError(err error) error {
	var pe *pgparser.Error
	if errors.As(err, &pe) {
		off := int32(-1)
		if pe.Cursorpos > 0 {
			off = int32(s.charOffset(pe.Cursorpos - 1))
		}
		return s.errAt(ErrSyntax, off, "%s", pe.Message)
	}
	return s.errAt(ErrSyntax, -1, "%v", err)
}
