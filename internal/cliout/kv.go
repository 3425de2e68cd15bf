package cliout

import (
	"encoding/json"
	"unicode/utf8"
)

// KVJSON is the output of the data verbs get, put and del with --output json.
type KVJSON struct {
	// Key is the key, as given.
	Key string `json:"key"`
	// Found says the key holds a value (get), Created that put made it, Existed that del
	// removed one.
	Found   *bool `json:"found,omitempty"`
	Created *bool `json:"created,omitempty"`
	Existed *bool `json:"existed,omitempty"`
	// Data is the value (base64 in JSON), Text the same as a string when valid UTF-8, and
	// Value the same as JSON when it is valid JSON (put --json stores only such values).
	Data  []byte          `json:"data,omitempty"`
	Text  *string         `json:"text,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// KVValue is get's JSON output for the value v found under key.
func KVValue(key string, v []byte) KVJSON {
	found := true
	out := KVJSON{Key: key, Found: &found, Data: v}
	if out.Data == nil {
		out.Data = []byte{}
	}
	if utf8.Valid(v) {
		s := string(v)
		out.Text = &s
	}
	if json.Valid(v) {
		out.Value = json.RawMessage(v)
	}
	return out
}
