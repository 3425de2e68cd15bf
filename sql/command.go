package sql

import (
	"regexp"
	"strings"

	"github.com/lockstepdb/lockstep/sql/plan"
)

// Commands: what one request of a user (client Exec and Query, lockstep sql) asks for,
// told apart by its first word, before anything is compiled. DROP, SHOW and EXPLAIN of a
// deployed name are Lockstep's own statements (PostgreSQL has no streams), matched here;
// everything else goes to PostgreSQL's grammar through Compile, EncodeInsert and
// CompileQuery.

// CommandKind says what a command does.
type CommandKind uint8

// The commands.
const (
	// CmdDeploy: CREATE STREAM, CREATE TABLE and CREATE MATERIALIZED VIEW statements,
	// deployed together as one module through the log.
	CmdDeploy CommandKind = iota + 1
	// CmdInsert: INSERT statements, appended through an exactly-once session.
	CmdInsert
	// CmdQuery: one SELECT over a table or view, answered from state.
	CmdQuery
	// CmdDrop: DROP STREAM|TABLE|MATERIALIZED VIEW names: the module that defined them is
	// removed through the log.
	CmdDrop
	// CmdShow: SHOW STREAMS, SHOW TABLES or SHOW VIEWS; SHOW SCHEMA name (Names holds
	// the one name, Show is 0): the deployed schema of one stream, table or view.
	CmdShow
	// CmdExplain: EXPLAIN of a script (compiled, not deployed) or of a deployed name.
	CmdExplain
	// CmdCreateSource: one CREATE SOURCE, deployed as a module of kind "source"
	// (CompileSource; source.go).
	CmdCreateSource
	// CmdDropSource: DROP SOURCE names: their modules are removed through the log.
	CmdDropSource
	// CmdShowSources: SHOW SOURCES.
	CmdShowSources
)

// Command is one parsed command.
type Command struct {
	Kind CommandKind
	// Text is the command's SQL; for CmdExplain of a script, the script, with EXPLAIN
	// blanked out so that places still count from the user's text.
	Text string
	// Names are the names a CmdDrop drops, or the one name a CmdExplain explains.
	Names []string
	// Show is what a CmdShow lists: plan.KindStream, plan.KindTable or plan.KindView.
	Show plan.Kind
	// IfExists is a CmdDrop's IF EXISTS: names not deployed are skipped, not refused.
	IfExists bool
}

var (
	dropRe    = regexp.MustCompile(`(?is)^drop\s+(stream|table|materialized\s+view)\s+(if\s+exists\s+)?([a-z_][a-z0-9_]*(?:\s*,\s*[a-z_][a-z0-9_]*)*)\s*;?\s*$`)
	showRe    = regexp.MustCompile(`(?is)^show\s+(streams|tables|views)\s*;?\s*$`)
	schemaRe  = regexp.MustCompile(`(?is)^show\s+schema\s+([a-z_][a-z0-9_]*)\s*;?\s*$`)
	explainRe = regexp.MustCompile(`(?is)^explain\s+([a-z_][a-z0-9_]*)\s*;?\s*$`)
	wordRe    = regexp.MustCompile(`^[A-Za-z]+`)
)

// ParseCommand tells what text asks for. Errors are *Error at their place.
func ParseCommand(text string) (Command, error) {
	s := &source{text: text}
	start := skipSpace(text)
	rest := text[start:]
	word := strings.ToLower(wordRe.FindString(rest))
	at := int32(start)
	if cmd, ok, err := parseSourceCommand(s, word, rest, start); ok {
		return cmd, err
	}
	switch word {
	case "create":
		return Command{Kind: CmdDeploy, Text: text}, nil
	case "insert":
		return Command{Kind: CmdInsert, Text: text}, nil
	case "select":
		return Command{Kind: CmdQuery, Text: text}, nil
	case "drop":
		m := dropRe.FindStringSubmatch(strings.TrimSpace(stripComments(rest)))
		if m == nil {
			return Command{}, s.errAt(ErrSyntax, at, "want DROP STREAM|TABLE|MATERIALIZED VIEW name[, ...]")
		}
		var names []string
		for _, n := range strings.Split(m[3], ",") {
			names = append(names, strings.ToLower(strings.TrimSpace(n)))
		}
		return Command{Kind: CmdDrop, Text: text, Names: names, IfExists: m[2] != ""}, nil
	case "show":
		if m := schemaRe.FindStringSubmatch(strings.TrimSpace(stripComments(rest))); m != nil {
			return Command{Kind: CmdShow, Text: text, Names: []string{strings.ToLower(m[1])}}, nil
		}
		m := showRe.FindStringSubmatch(strings.TrimSpace(stripComments(rest)))
		if m == nil {
			return Command{}, s.errAt(ErrSyntax, at, "want SHOW STREAMS, SHOW TABLES, SHOW VIEWS or SHOW SCHEMA name")
		}
		k := map[string]plan.Kind{"streams": plan.KindStream, "tables": plan.KindTable, "views": plan.KindView}[strings.ToLower(m[1])]
		return Command{Kind: CmdShow, Text: text, Show: k}, nil
	case "explain":
		if m := explainRe.FindStringSubmatch(strings.TrimSpace(stripComments(rest))); m != nil {
			return Command{Kind: CmdExplain, Text: text, Names: []string{strings.ToLower(m[1])}}, nil
		}
		// The script after EXPLAIN, at its own offsets.
		return Command{Kind: CmdExplain, Text: text[:start] + strings.Repeat(" ", len(word)) + rest[len(word):]}, nil
	case "":
		if strings.TrimSpace(stripComments(rest)) == "" {
			return Command{}, s.errAt(ErrSyntax, -1, "no statements")
		}
	}
	return Command{}, s.errAt(ErrUnsupported, at,
		"statement %q is not supported (CREATE, INSERT, SELECT, DROP, SHOW, EXPLAIN)", firstWords(rest))
}

// skipSpace returns the offset of text's first byte outside white space and comments.
func skipSpace(text string) int {
	i := 0
	for i < len(text) {
		switch {
		case text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r':
			i++
		case strings.HasPrefix(text[i:], "--"):
			j := strings.IndexByte(text[i:], '\n')
			if j < 0 {
				return len(text)
			}
			i += j + 1
		case strings.HasPrefix(text[i:], "/*"):
			j := strings.Index(text[i+2:], "*/")
			if j < 0 {
				return len(text)
			}
			i += j + 4
		default:
			return i
		}
	}
	return i
}

// stripComments removes -- comments (DROP, SHOW and EXPLAIN name take no strings).
func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func firstWords(s string) string {
	f := strings.Fields(s)
	if len(f) > 2 {
		f = f[:2]
	}
	return strings.Join(f, " ")
}

// ModuleName returns the name a deployment of a is deployed under: its first relation's,
// else its first view's.
func (a *Artifact) ModuleName() string {
	if len(a.Plan.Relations) > 0 {
		return a.Plan.Relations[0].Name
	}
	if len(a.Plan.Views) > 0 {
		return a.Plan.Views[0].Name
	}
	return ""
}
