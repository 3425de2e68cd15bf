package sql

// The Nexmark queries that read views or aggregate joins, as Lockstep SQL over the
// streams person, auction and bid declared with the generator's record layout
// (docs/sql.md, "Nexmark", which lists each adaptation of the standard texts). Each is
// one script: the helper views the standard text writes as subqueries, then the query's
// view, named q4, q5 and q7. Deploy NexmarkStreams first (or in the same script).
const (
	// NexmarkStreams declares person, auction and bid (out-of-orderness 1 s).
	NexmarkStreams = `CREATE STREAM person (id bigint, name text, email_address text, credit_card text, city text, state text,
    date_time timestamp, extra text)
  WITH (key = 'id', event_time = 'date_time', out_of_orderness = '1 second', format = 'map');
CREATE STREAM auction (id bigint, item_name text, description text, initial_bid bigint, reserve bigint,
    date_time timestamp, expires timestamp, seller bigint, category bigint, extra text)
  WITH (key = 'id', event_time = 'date_time', out_of_orderness = '1 second', format = 'map');
CREATE STREAM bid (auction bigint, bidder bigint, price bigint, channel text, url text, date_time timestamp, extra text)
  WITH (key = 'auction', event_time = 'date_time', out_of_orderness = '1 second', format = 'map');
`

	// NexmarkQ4 is q4, the average closing price per category: the highest bid of each
	// auction within its lifetime (an aggregate over an interval join bounded by the
	// auction's expiry), then their average per category (an aggregate over that view).
	NexmarkQ4 = `CREATE MATERIALIZED VIEW q4_final AS
  SELECT MAX(B.price) AS final, A.category
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
  GROUP BY A.id, A.category;
CREATE MATERIALIZED VIEW q4 AS
  SELECT Q.category, AVG(Q.final) AS avg
  FROM q4_final Q
  GROUP BY Q.category;
`

	// NexmarkQ5 is q5, hot items: the bids per auction in each HOP window, the highest
	// count per window, and the auctions at it (a view over a view, joined with it).
	NexmarkQ5 = `CREATE MATERIALIZED VIEW q5_bids AS
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
   AND AuctionBids.num >= MaxBids.maxn;
`

	// NexmarkQ7 is q7, highest bid: the highest price of each TUMBLE window, then the
	// bids of the window at that price (a join whose side is a view).
	NexmarkQ7 = `CREATE MATERIALIZED VIEW q7_max AS
  SELECT MAX(B1.price) AS maxprice, window_end AS date_time
  FROM TUMBLE(bid, date_time, INTERVAL '10 seconds') B1
  GROUP BY window_start, window_end
  EMIT ON WINDOW CLOSE;
CREATE MATERIALIZED VIEW q7 AS
  SELECT B.auction, B.price, B.bidder, B.date_time, B.extra
  FROM bid B JOIN q7_max B1 ON B.price = B1.maxprice
  WHERE B.date_time >= B1.date_time - INTERVAL '10 seconds' AND B.date_time < B1.date_time;
`
)
