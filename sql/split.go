package sql

import "strings"

// Splitting a script into statements, for lockstep sql's -f and its shell: each statement
// is sent as one command (client SQL.Exec), so each CREATE is a module of its own and a
// DROP names one object. The split follows the lexical rules that matter for ';': string
// literals ('...', with '' inside), quoted identifiers ("..."), -- and /* */ comments.

// Statement is one statement of a script and where it starts in the script.
type Statement struct {
	// Text is the statement, without its ';'.
	Text string
	// Line and Column (1-based, in characters) are where Text starts in the script.
	Line, Column int
}

// Place returns the place in the script of line and column of Text.
func (s Statement) Place(line, column int) (int, int) {
	if line <= 1 {
		return s.Line, s.Column + column - 1
	}
	return s.Line + line - 1, column
}

// SplitStatements splits script at each ';' outside literals and comments, dropping
// statements that hold only white space and comments. complete reports whether the
// script ends after a ';' (or holds nothing but white space and comments): a shell reads
// more lines until it does.
func SplitStatements(script string) (stmts []Statement, complete bool) {
	start := 0
	add := func(end int) {
		text := script[start:end]
		if skip := skipSpace(text); skip < len(text) {
			line := 1 + strings.Count(script[:start+skip], "\n")
			col := 1 + len([]rune(script[strings.LastIndexByte(script[:start+skip], '\n')+1:start+skip]))
			stmts = append(stmts, Statement{Text: text[skip:], Line: line, Column: col})
		}
	}
	i := 0
	for i < len(script) {
		switch c := script[i]; {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(script) {
				if script[j] == c {
					if j+1 < len(script) && script[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			i = j + 1
		case strings.HasPrefix(script[i:], "--"):
			j := strings.IndexByte(script[i:], '\n')
			if j < 0 {
				i = len(script)
			} else {
				i += j + 1
			}
		case strings.HasPrefix(script[i:], "/*"):
			j := strings.Index(script[i+2:], "*/")
			if j < 0 {
				i = len(script) + 1 // unterminated: incomplete
			} else {
				i += j + 4
			}
		case c == ';':
			add(i)
			start = i + 1
			i++
		default:
			i++
		}
	}
	// i passes the end only inside an unterminated literal or comment.
	complete = i <= len(script) && skipSpace(script[min(start, len(script)):]) == len(script)-min(start, len(script))
	if start < len(script) {
		add(len(script))
	}
	return stmts, complete
}
