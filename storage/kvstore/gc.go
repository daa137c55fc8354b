package kvstore

// gcDiscardRatio: a value-log file is rewritten once at least this share of
// it is garbage (overwritten or deleted rows).
const gcDiscardRatio = 0.5
