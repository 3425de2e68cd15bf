package sql

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// CREATE SOURCE, DROP SOURCE and SHOW SOURCES (docs/sql.md, "CREATE SOURCE";
// docs/sources.md): Lockstep's own statements, in the shape of RisingWave's and Flink's
// connector DDL (a WITH list of quoted options, connector = 'kafka'), read by a small
// scanner of their own here (PostgreSQL's grammar has no sources):
//
//	CREATE SOURCE name INTO stream WITH (connector = 'kafka', brokers = 'host:port,...',
//	    topic = '...', format = 'json' | 'msgpack' | 'raw'
//	    [, dead_letter = 'stream'] [, session_timeout = '10 seconds'])
//	DROP SOURCE name[, ...]
//	SHOW SOURCES
//
// A CREATE SOURCE is a command of its own (one statement), compiled by CompileSource into
// a plan.Source that the log carries as a module of kind "source".

// SourceOptions configure CompileSource.
type SourceOptions struct {
	// Catalog holds the schemas of the deployed SQL relations and views: the stream a
	// source writes, when it is a CREATE STREAM, takes its schema from here.
	Catalog []plan.Schema
	// Exists reports whether a stream of this name exists in the cluster (any stream:
	// a CREATE STREAM's or one made with stream.create). Required.
	Exists func(name string) bool
	// Deployed reports whether a source of this name is deployed. Default: none is.
	Deployed func(name string) bool
}

var (
	dropSourceRe  = regexp.MustCompile(`(?is)^drop\s+source\s+(?:if\s+exists\s+)?([a-z_][a-z0-9_]*(?:\s*,\s*[a-z_][a-z0-9_]*)*)\s*;?\s*$`)
	showSourcesRe = regexp.MustCompile(`(?is)^show\s+sources\s*;?\s*$`)
	sourceNameRe  = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	createSrcRe   = regexp.MustCompile(`(?is)^create\s+source\b`)
)

// parseSourceCommand recognises the source commands in rest (text from its first word,
// at byte offset start); ok is false for any other command.
func parseSourceCommand(s *source, word, rest string, start int) (cmd Command, ok bool, err error) {
	switch word {
	case "create":
		if createSrcRe.MatchString(rest) {
			return Command{Kind: CmdCreateSource, Text: s.text}, true, nil
		}
	case "drop":
		if !regexp.MustCompile(`(?is)^drop\s+source\b`).MatchString(rest) {
			return Command{}, false, nil
		}
		m := dropSourceRe.FindStringSubmatch(strings.TrimSpace(stripComments(rest)))
		if m == nil {
			return Command{}, true, s.errAt(ErrSyntax, int32(start), "want DROP SOURCE name[, ...]")
		}
		var names []string
		for _, n := range strings.Split(m[1], ",") {
			names = append(names, strings.ToLower(strings.TrimSpace(n)))
		}
		return Command{Kind: CmdDropSource, Text: s.text, Names: names}, true, nil
	case "show":
		if showSourcesRe.MatchString(strings.TrimSpace(stripComments(rest))) {
			return Command{Kind: CmdShowSources, Text: s.text}, true, nil
		}
	}
	return Command{}, false, nil
}

// srcToken is one token of a CREATE SOURCE: a word (letters, digits, _ and .), a quoted
// string (its value in text, ” an escaped quote), or one punctuation character.
type srcToken struct {
	kind byte // 'w' word, 's' string, 'p' punctuation
	text string
	at   int32
}

func scanSource(s *source) ([]srcToken, error) {
	t := s.text
	var out []srcToken
	for i := 0; i < len(t); {
		c := t[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.HasPrefix(t[i:], "--"):
			j := strings.IndexByte(t[i:], '\n')
			if j < 0 {
				i = len(t)
			} else {
				i += j + 1
			}
		case strings.HasPrefix(t[i:], "/*"):
			j := strings.Index(t[i+2:], "*/")
			if j < 0 {
				return nil, s.errAt(ErrSyntax, int32(i), "unterminated comment")
			}
			i += j + 4
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for ; ; j++ {
				if j >= len(t) {
					return nil, s.errAt(ErrSyntax, int32(i), "unterminated string")
				}
				if t[j] == '\'' {
					if j+1 < len(t) && t[j+1] == '\'' {
						b.WriteByte('\'')
						j++
						continue
					}
					break
				}
				b.WriteByte(t[j])
			}
			out = append(out, srcToken{'s', b.String(), int32(i)})
			i = j + 1
		case isWordByte(c):
			j := i
			for j < len(t) && isWordByte(t[j]) {
				j++
			}
			out = append(out, srcToken{'w', strings.ToLower(t[i:j]), int32(i)})
			i = j
		case c == '"':
			j := strings.IndexByte(t[i+1:], '"')
			if j < 0 {
				return nil, s.errAt(ErrSyntax, int32(i), "unterminated quoted name")
			}
			out = append(out, srcToken{'w', t[i+1 : i+1+j], int32(i)})
			i += j + 2
		default:
			out = append(out, srcToken{'p', string(c), int32(i)})
			i++
		}
	}
	return out, nil
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// sourceOptions are the WITH options of CREATE SOURCE, with their aliases (Flink's and
// RisingWave's names for the brokers).
var sourceOptionNames = map[string]string{
	"connector": "connector", "brokers": "brokers", "properties.bootstrap.server": "brokers",
	"properties.bootstrap.servers": "brokers", "topic": "topic", "format": "format",
	"dead_letter": "dead_letter", "session_timeout": "session_timeout",
}

// CompileSource compiles one CREATE SOURCE command into the source definition the log
// carries. Every error is an *Error at its place; on error nothing is returned.
func CompileSource(text string, opts SourceOptions) (*plan.Source, error) {
	s := &source{text: text}
	toks, err := scanSource(s)
	if err != nil {
		return nil, err
	}
	end := int32(len(text))
	pos := 0
	peek := func() srcToken {
		if pos < len(toks) {
			return toks[pos]
		}
		return srcToken{at: end}
	}
	expect := func(kind byte, text, what string) (srcToken, error) {
		t := peek()
		if t.kind != kind || (text != "" && t.text != text) {
			got := "the end"
			if t.kind != 0 {
				got = fmt.Sprintf("%q", t.text)
			}
			return t, s.errAt(ErrSyntax, t.at, "CREATE SOURCE: want %s, got %s", what, got)
		}
		pos++
		return t, nil
	}
	if _, err := expect('w', "create", "CREATE"); err != nil {
		return nil, err
	}
	if _, err := expect('w', "source", "SOURCE"); err != nil {
		return nil, err
	}
	nameTok, err := expect('w', "", "the source's name")
	if err != nil {
		return nil, err
	}
	if _, err := expect('w', "into", "INTO stream"); err != nil {
		return nil, err
	}
	intoTok, err := expect('w', "", "the name of the stream records go into")
	if err != nil {
		return nil, err
	}
	withTok, err := expect('w', "with", "WITH (option = 'value', ...)")
	if err != nil {
		return nil, err
	}
	if _, err := expect('p', "(", "( after WITH"); err != nil {
		return nil, err
	}
	vals := map[string]string{}
	at := map[string]int32{}
	for {
		k, err := expect('w', "", "an option name")
		if err != nil {
			return nil, err
		}
		name, ok := sourceOptionNames[k.text]
		if !ok {
			return nil, s.errAt(ErrUnknown, k.at, "option %s (options: connector, brokers, topic, format, dead_letter, session_timeout)", k.text)
		}
		if _, dup := vals[name]; dup {
			return nil, s.errAt(ErrDefinition, k.at, "option %s given twice", name)
		}
		if _, err := expect('p', "=", "= after "+k.text); err != nil {
			return nil, err
		}
		v := peek()
		if v.kind != 's' && v.kind != 'w' {
			return nil, s.errAt(ErrSyntax, v.at, "option %s: want a quoted value", k.text)
		}
		pos++
		vals[name], at[name] = v.text, v.at
		if peek().kind == 'p' && peek().text == "," {
			pos++
			continue
		}
		if _, err := expect('p', ")", ", or ) in the WITH list"); err != nil {
			return nil, err
		}
		break
	}
	if t := peek(); t.kind == 'p' && t.text == ";" {
		pos++
	}
	if t := peek(); t.kind != 0 {
		return nil, s.errAt(ErrUnsupported, t.at, "CREATE SOURCE is a command of its own: nothing may follow it")
	}

	src := &plan.Source{Version: plan.SourceVersion, Name: nameTok.text, Stream: intoTok.text,
		SessionTimeoutMs: plan.DefaultSourceSessionTimeoutMs}
	if !sourceNameRe.MatchString(src.Name) || len(src.Name)+len(partition.DeadLetterSuffix) > partition.MaxNameBytes {
		return nil, s.errAt(ErrDefinition, nameTok.at, "source name %s: want a SQL name of at most %d bytes", src.Name, partition.MaxNameBytes-len(partition.DeadLetterSuffix))
	}
	if opts.Deployed != nil && opts.Deployed(src.Name) {
		return nil, s.errAt(ErrDefinition, nameTok.at, "source %s already exists", src.Name)
	}
	for _, req := range []string{"connector", "brokers", "topic", "format"} {
		if _, ok := vals[req]; !ok {
			return nil, s.errAt(ErrDefinition, withTok.at, "CREATE SOURCE %s needs the option %s", src.Name, req)
		}
	}
	if c := strings.ToLower(vals["connector"]); c != plan.ConnectorKafka {
		return nil, s.errAt(ErrUnsupported, at["connector"], "connector = '%s': the connector is 'kafka'", vals["connector"])
	}
	src.Connector = plan.ConnectorKafka
	for _, b := range strings.Split(vals["brokers"], ",") {
		if b = strings.TrimSpace(b); b != "" {
			src.Brokers = append(src.Brokers, b)
		}
	}
	if len(src.Brokers) == 0 || len(src.Brokers) > plan.MaxSourceBrokers || slices.ContainsFunc(src.Brokers, func(b string) bool { return strings.ContainsAny(b, " \t\n") }) {
		return nil, s.errAt(ErrDefinition, at["brokers"], "brokers = '%s': want host:port[,host:port...] (1 to %d)", vals["brokers"], plan.MaxSourceBrokers)
	}
	src.Topic = vals["topic"]
	if src.Topic == "" || len(src.Topic) > plan.MaxSourceTopicBytes || strings.IndexByte(src.Topic, 0) >= 0 {
		return nil, s.errAt(ErrDefinition, at["topic"], "topic = '%s': want 1 to %d bytes", src.Topic, plan.MaxSourceTopicBytes)
	}
	switch f := strings.ToLower(vals["format"]); f {
	case plan.SourceFormatJSON, plan.SourceFormatMsgpack, plan.SourceFormatRaw:
		src.Format = f
	default:
		return nil, s.errAt(ErrDefinition, at["format"], "format = '%s': want 'json', 'msgpack' or 'raw'", vals["format"])
	}
	if v, ok := vals["session_timeout"]; ok {
		ms, err := plan.ParseInterval(v)
		if err != nil || ms < plan.MinSourceSessionTimeoutMs || ms > plan.MaxSourceSessionTimeoutMs {
			return nil, s.errAt(ErrDefinition, at["session_timeout"], "session_timeout = '%s': want %d ms to %d s",
				v, plan.MinSourceSessionTimeoutMs, plan.MaxSourceSessionTimeoutMs/1000)
		}
		src.SessionTimeoutMs = ms
	}
	// The stream: a CREATE STREAM (its schema decodes the records) or a stream without
	// one; never a table (its rows live on their key's partition, a source's records all
	// on the source's) or a view (written by its processors only).
	for i := range opts.Catalog {
		sc := &opts.Catalog[i]
		if sc.Name != src.Stream {
			continue
		}
		if sc.Kind != plan.KindStream {
			return nil, s.errAt(ErrDefinition, intoTok.at, "INTO %s: %s is a %s; a source writes into a stream", src.Stream, src.Stream, sc.Kind)
		}
		c := *sc
		src.Schema = &c
	}
	if src.Schema == nil && (opts.Exists == nil || !opts.Exists(src.Stream)) {
		return nil, s.errAt(ErrUnknown, intoTok.at, "INTO %s: no stream of that name (CREATE STREAM it first)", src.Stream)
	}
	if src.Schema != nil && src.Format == plan.SourceFormatRaw {
		return nil, s.errAt(ErrDefinition, at["format"], "format = 'raw' into %s, a stream with columns: use 'json' or 'msgpack'", src.Stream)
	}
	if d, ok := vals["dead_letter"]; ok {
		if opts.Exists == nil || !opts.Exists(d) {
			return nil, s.errAt(ErrUnknown, at["dead_letter"], "dead_letter = '%s': no stream of that name", d)
		}
		if d == src.Stream {
			return nil, s.errAt(ErrDefinition, at["dead_letter"], "dead_letter = '%s': the stream records go into", d)
		}
		src.DeadLetter = d
	} else {
		// name.dead, created with the source unless it exists (a source created again
		// after a DROP finds its own).
		src.DeadLetter = src.Name + partition.DeadLetterSuffix
		src.CreateDeadLetter = opts.Exists == nil || !opts.Exists(src.DeadLetter)
		if src.DeadLetter == src.Stream {
			return nil, s.errAt(ErrDefinition, intoTok.at, "INTO %s: the source's dead-letter stream: name another with dead_letter = '...'", src.Stream)
		}
	}
	if err := src.Validate(); err != nil {
		return nil, s.errAt(ErrDefinition, -1, "internal: the source does not validate: %v", err)
	}
	return src, nil
}
