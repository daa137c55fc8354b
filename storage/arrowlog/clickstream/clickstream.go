// Package clickstream generates a deterministic stream of web analytics
// events: a 20-column log table with the mix of columns such tables have
// (ids, a millisecond event time, low-cardinality strings, sparse amounts,
// flags, a nested column of tags and a free-text search query). Benchmarks of the row and Arrow
// payloads use it, and so can `floe bench`: the same seed gives the same
// rows on every machine.
package clickstream

import (
	"math/rand/v2"
	"strconv"

	"github.com/floedb/floe/storage/record"
)

// Columns of Schema, by index.
const (
	EventID = iota
	UserID
	SessionID
	EventTime
	EventType
	Page
	Referrer
	Country
	Device
	OS
	Browser
	Amount
	Quantity
	ProductID
	DurationMillis
	ScrollDepth
	IsNewUser
	IsBot
	Tags // ARRAY<STRING NOT NULL>: the user's experiment bucket, then 0 to 2 labels
	SearchQuery
)

// Schema is the events' schema.
func Schema() record.Schema {
	col := func(name string, t record.DataType, nullable bool) record.Column {
		return record.Column{Name: name, Type: t, Nullable: nullable}
	}
	return record.Schema{Columns: []record.Column{
		col("event_id", record.BigInt(), false),
		col("user_id", record.BigInt(), false),
		col("session_id", record.BigInt(), false),
		col("event_time", record.TimestampLTZ(3), false),
		col("event_type", record.String(), false),
		col("page", record.String(), false),
		col("referrer", record.String(), true),
		col("country", record.String(), false),
		col("device", record.String(), false),
		col("os", record.String(), false),
		col("browser", record.String(), false),
		col("amount", record.Decimal(12, 2), true),
		col("quantity", record.Int(), true),
		col("product_id", record.BigInt(), true),
		col("duration_ms", record.Int(), false),
		col("scroll_depth", record.SmallInt(), false),
		col("is_new_user", record.Boolean(), false),
		col("is_bot", record.Boolean(), false),
		col("tags", record.Array(record.String(), false), false),
		col("search_query", record.String(), true),
	}}
}

var (
	eventTypes = []string{"page_view", "page_view", "page_view", "click", "click", "scroll", "search", "add_to_cart", "purchase"}
	countries  = []string{"US", "US", "US", "DE", "GB", "FR", "IN", "BR", "JP", "CA", "NL", "SE", "ES", "IT", "AU", "MX", "PL", "KR"}
	devices    = []string{"desktop", "mobile", "mobile", "tablet"}
	systems    = []string{"Windows", "macOS", "iOS", "Android", "Linux", "ChromeOS"}
	browsers   = []string{"Chrome", "Safari", "Firefox", "Edge", "Samsung Internet", "Opera"}
	referrers  = []string{"https://www.google.com/", "https://www.bing.com/", "https://t.co/", "https://www.facebook.com/",
		"https://news.ycombinator.com/", "https://duckduckgo.com/", "https://www.reddit.com/", "android-app://com.google.android.gm/"}
	sections = []string{"/", "/products/", "/category/", "/cart", "/checkout", "/search", "/account", "/blog/"}
	labels   = []string{"returning", "promo", "newsletter", "mobile-app", "beta", "loyalty"}
	buckets  = []string{"exp-0", "exp-1", "exp-2", "exp-3", "exp-4", "exp-5", "exp-6", "exp-7",
		"exp-8", "exp-9", "exp-10", "exp-11", "exp-12", "exp-13", "exp-14", "exp-15"}
	words = []string{"red", "running", "shoes", "wireless", "headphones", "cheap", "laptop", "stand", "organic", "coffee",
		"beans", "gift", "for", "men", "women", "kids", "waterproof", "jacket", "usb", "c", "cable", "best", "2024", "sale"}
)

// Generator makes the events of one seed. It is not safe for concurrent
// use.
type Generator struct {
	rng      *rand.Rand
	zipf     *rand.Zipf
	enc      *record.RowEncoder
	tags     *record.ArrayEncoder
	tagBytes []byte
	next     int64 // event id
	millis   int64 // event time
	users    map[int64]int64
	sessions int64
	text     []byte
}

// startMillis is 2025-01-01T00:00:00Z, where event times start.
const startMillis = 1_735_689_600_000

// New returns a generator of the events of seed.
func New(seed uint64) *Generator {
	rng := rand.New(rand.NewPCG(seed, 0x636c69636b))
	enc, err := record.NewRowEncoder(Schema())
	if err != nil {
		panic("clickstream: " + err.Error()) // the schema is a constant
	}
	tags, err := record.NewArrayEncoder(record.String(), false)
	if err != nil {
		panic("clickstream: " + err.Error())
	}
	return &Generator{
		tags:   tags,
		rng:    rng,
		zipf:   rand.NewZipf(rng, 1.1, 1, 999_999),
		enc:    enc,
		millis: startMillis,
		users:  make(map[int64]int64),
	}
}

// Row appends the next event's row to dst.
func (g *Generator) Row(dst []byte) []byte {
	e, r := g.enc, g.rng
	g.next++
	g.millis += int64(r.IntN(40))
	user := int64(g.zipf.Uint64()) + 1
	session, ok := g.users[user]
	if !ok || r.IntN(20) == 0 {
		g.sessions++
		session = g.sessions
		g.users[user] = session
	}
	kind := eventTypes[r.IntN(len(eventTypes))]
	e.SetInt64(EventID, g.next)
	e.SetInt64(UserID, user)
	e.SetInt64(SessionID, session)
	e.SetTimestamp(EventTime, g.millis, 0)
	e.SetString(EventType, kind)
	section := sections[r.IntN(len(sections))]
	g.text = append(g.text[:0], section...)
	if section[len(section)-1] == '/' && section != "/" {
		g.text = strconv.AppendInt(g.text, int64(r.IntN(200)), 10)
	}
	e.SetStringBytes(Page, g.text)
	if r.IntN(10) < 3 {
		e.SetNull(Referrer)
	} else {
		e.SetString(Referrer, referrers[r.IntN(len(referrers))])
	}
	e.SetString(Country, countries[r.IntN(len(countries))])
	e.SetString(Device, devices[r.IntN(len(devices))])
	e.SetString(OS, systems[r.IntN(len(systems))])
	e.SetString(Browser, browsers[r.IntN(len(browsers))])
	if kind == "purchase" || kind == "add_to_cart" {
		e.SetDecimal(Amount, int64(99+r.IntN(50_000)))
		e.SetInt64(Quantity, int64(1+r.IntN(4)))
		e.SetInt64(ProductID, int64(100_000+r.IntN(5_000)))
	} else {
		e.SetNull(Amount)
		e.SetNull(Quantity)
		e.SetNull(ProductID)
	}
	e.SetInt64(DurationMillis, int64(r.ExpFloat64()*3000))
	e.SetInt64(ScrollDepth, int64(r.IntN(101)))
	e.SetBool(IsNewUser, r.IntN(10) == 0)
	e.SetBool(IsBot, r.IntN(50) == 0)
	g.tags.AppendString(buckets[user%int64(len(buckets))])
	for n := r.IntN(3); n > 0; n-- {
		g.tags.AppendString(labels[r.IntN(len(labels))])
	}
	var err error
	if g.tagBytes, err = g.tags.Finish(g.tagBytes[:0]); err != nil {
		panic("clickstream: " + err.Error()) // every tag is valid UTF-8
	}
	e.SetNested(Tags, g.tagBytes)
	if kind == "search" {
		g.text = g.text[:0]
		for n := 1 + r.IntN(4); n > 0; n-- {
			g.text = append(g.text, words[r.IntN(len(words))]...)
			if n > 1 {
				g.text = append(g.text, ' ')
			}
		}
		e.SetStringBytes(SearchQuery, g.text)
	} else {
		e.SetNull(SearchQuery)
	}
	row, err := e.Finish(dst)
	if err != nil {
		panic("clickstream: " + err.Error()) // every value is in range
	}
	return row
}
