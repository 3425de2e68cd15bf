package nexmark

import (
	"fmt"
	"strings"
)

// SQLStreams declares the streams person, auction and bid in Lockstep's SQL over this
// package's record layout (msgpack maps of the standard columns, keyed by id, id and
// auction, at date_time), so that the generator's records are read as they are
// (docs/sql.md, "Nexmark"). Format it with SQLStreamsText.
const SQLStreams = `
CREATE STREAM person (id bigint, name text, email_address text, credit_card text, city text, state text,
    date_time timestamp, extra text)
  WITH (key = 'id', event_time = 'date_time', out_of_orderness = '%[1]s', format = 'map');
CREATE STREAM auction (id bigint, item_name text, description text, initial_bid bigint, reserve bigint,
    date_time timestamp, expires timestamp, seller bigint, category bigint, extra text)
  WITH (key = 'id', event_time = 'date_time', out_of_orderness = '%[1]s', format = 'map');
CREATE STREAM bid (auction bigint, bidder bigint, price bigint, channel text, url text, date_time timestamp, extra text)
  WITH (key = 'auction', event_time = 'date_time', out_of_orderness = '%[1]s', format = 'map');
`

// SQLStreamsText returns SQLStreams with the streams' out-of-orderness, an interval
// text such as "1 second" or "500 milliseconds".
func SQLStreamsText(outOfOrderness string) string { return fmt.Sprintf(SQLStreams, outOfOrderness) }

// SQLQuery is a Nexmark query in Lockstep's SQL: the standard text, adapted in syntax
// only (docs/sql.md, "Nexmark").
type SQLQuery struct {
	// Name is the query (q0 … q8) and the name of the view whose rows are its answer.
	Name string
	// Views is the query's CREATE MATERIALIZED VIEW statements, the view Name last (a
	// query may need views over views). Its columns are named as the msgpack names of
	// the query's row type (Q0Row …): the benchmark compares the view's rows with the
	// reference's by those names.
	Views string
}

// SQLQueries are the Nexmark queries the SQL layer runs, in order. To add one, add its
// line here; `lockstep bench nexmark --engine sql`, its check
// against the reference and sql/nexmark_test.go's deploy then take it.
var SQLQueries = []SQLQuery{
	{"q0", `CREATE MATERIALIZED VIEW q0 AS SELECT auction, bidder, price, date_time, extra FROM bid;`},
	{"q1", `CREATE MATERIALIZED VIEW q1 AS SELECT auction, bidder, 0.908 * price AS price, date_time, extra FROM bid;`},
	{"q2", `CREATE MATERIALIZED VIEW q2 AS SELECT auction, price FROM bid WHERE auction % 123 = 0;`},
	{"q3", `CREATE MATERIALIZED VIEW q3 AS
  SELECT P.name, P.city, P.state, A.id FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
  WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA');`},
	{"q8", `CREATE MATERIALIZED VIEW q8 AS
  SELECT P.id, P.name, P.window_start AS starttime
  FROM TUMBLE(person, date_time, INTERVAL '10 seconds') P JOIN TUMBLE(auction, date_time, INTERVAL '10 seconds') A
    ON P.id = A.seller AND P.window_start = A.window_start AND P.window_end = A.window_end
  GROUP BY P.id, P.name, P.window_start;`},
	// q4, q5 and q7 write the standard text's subqueries as views over views.
	{"q4", `CREATE MATERIALIZED VIEW q4_final AS
  SELECT MAX(B.price) AS final, A.category
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
  GROUP BY A.id, A.category;
CREATE MATERIALIZED VIEW q4 AS
  SELECT Q.category, AVG(Q.final) AS avg
  FROM q4_final Q
  GROUP BY Q.category;`},
	{"q5", `CREATE MATERIALIZED VIEW q5_bids AS
  SELECT B1.auction, count(*) AS num, window_start AS starttime, window_end AS endtime
  FROM HOP(bid, date_time, INTERVAL '2 seconds', INTERVAL '10 seconds') B1
  GROUP BY B1.auction, window_start, window_end
  EMIT ON WINDOW CLOSE;
CREATE MATERIALIZED VIEW q5_max AS
  SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
  FROM q5_bids CountBids
  GROUP BY CountBids.starttime, CountBids.endtime;
CREATE MATERIALIZED VIEW q5 AS
  SELECT AuctionBids.auction, AuctionBids.num, AuctionBids.starttime, AuctionBids.endtime
  FROM q5_bids AS AuctionBids JOIN q5_max AS MaxBids
    ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
   AND AuctionBids.num >= MaxBids.maxn;`},
	{"q7", `CREATE MATERIALIZED VIEW q7_max AS
  SELECT MAX(B1.price) AS maxprice, window_end AS date_time
  FROM TUMBLE(bid, date_time, INTERVAL '10 seconds') B1
  GROUP BY window_start, window_end
  EMIT ON WINDOW CLOSE;
CREATE MATERIALIZED VIEW q7 AS
  SELECT B.auction, B.price, B.bidder, B.date_time, B.extra
  FROM bid B JOIN q7_max B1 ON B.price = B1.maxprice
  WHERE B.date_time >= B1.date_time - INTERVAL '10 seconds' AND B.date_time < B1.date_time;`},
}

// SQLText returns query q's views (SQLQuery.Views), and false if the SQL layer does not
// run q.
func SQLText(q string) (string, bool) {
	for _, x := range SQLQueries {
		if x.Name == q {
			return strings.TrimSpace(x.Views), true
		}
	}
	return "", false
}

// SQLNames returns the names of SQLQueries, in order.
func SQLNames() []string {
	out := make([]string, len(SQLQueries))
	for i, x := range SQLQueries {
		out[i] = x.Name
	}
	return out
}
