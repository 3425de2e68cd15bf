package cliout

import (
	"encoding/json"
	"testing"
)

// TestKVValue: get's JSON carries the bytes always, the text when UTF-8 and the value
// when JSON; an empty value has no data (omitempty) and the empty text.
func TestKVValue(t *testing.T) {
	for _, tc := range []struct {
		v    []byte
		want string
	}{
		{[]byte(`{"a":1}`), `{"key":"k","found":true,"data":"eyJhIjoxfQ==","text":"{\"a\":1}","value":{"a":1}}`},
		{[]byte("hi"), `{"key":"k","found":true,"data":"aGk=","text":"hi"}`},
		{[]byte{0xff}, `{"key":"k","found":true,"data":"/w=="}`},
		{nil, `{"key":"k","found":true,"text":""}`},
	} {
		b, err := json.Marshal(KVValue("k", tc.v))
		if err != nil || string(b) != tc.want {
			t.Errorf("%q: got %s, %v; want %s", tc.v, b, err, tc.want)
		}
	}
}
