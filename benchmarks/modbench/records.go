package modbench

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Shape of the generated records.
const (
	// Pages is the number of distinct pages.
	Pages = 50
	// Users is the number of distinct users (the record keys).
	Users = 997
	// BotEvery makes every BotEvery-th record a bot's.
	BotEvery = 10
	// BaseMs is the event time of record 0; record i is at BaseMs + i.
	BaseMs = 1_700_000_000_000
)

// Record is one generated input record.
type Record struct {
	Key       []byte
	Value     []byte // msgpack map {user, page, agent, ms}
	EventTime int64  // Unix ms
}

// MakeRecord returns record i of the deterministic input.
func MakeRecord(i int64) (Record, error) {
	agent := "firefox/120"
	if i%BotEvery == 0 {
		agent = "bot/1.0"
	}
	user := fmt.Sprintf("u%d", i%Users)
	ms := int64(BaseMs) + i
	v, err := msgpack.Marshal(Click{User: user, Page: fmt.Sprintf("/p/%d", i%Pages), Agent: agent, Ms: ms})
	if err != nil {
		return Record{}, err
	}
	return Record{Key: []byte(user), Value: v, EventTime: ms}, nil
}

// Expected returns what the total procedure answers after records [0, n) were handled:
// the number of non-bot records and the number of distinct (page, window) pairs.
func Expected(n int64) (sum, rows int64) {
	seen := map[string]bool{}
	for i := range n {
		if i%BotEvery == 0 {
			continue
		}
		sum++
		seen[string(windowKey(fmt.Sprintf("/p/%d", i%Pages), int64(BaseMs)+i))] = true
	}
	return sum, int64(len(seen))
}
