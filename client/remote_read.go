package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// errRemoteRead marks a failed direct read of a remote segment: the
// scanner asks the leader to read it instead from then on.
var errRemoteRead = pkgerr.New("client", "reading a remote segment")

// readRemote reads whole batches of a remote segment the leader pointed
// at, straight from object storage with HTTP range requests: from the
// batch holding offset on, about maxBytes, at least that batch, never past
// the segment's end. The leader's position comes from a sparse index and
// may be batches before offset: those are read past, never returned, so a
// budget that holds one batch still moves forward.
func readRemote(ctx context.Context, hc *http.Client, ref *pb.RemoteSegmentRef, offset int64, maxBytes int) ([]byte, error) {
	for pos := ref.Position; pos < ref.Bytes; {
		data, err := readRemoteAt(ctx, hc, ref, pos, maxBytes)
		if err != nil {
			return nil, err
		}
		skip := 0
		for it := record.NewBatchIterator(data, false); it.Next(); {
			if it.Batch().NextOffset() > offset {
				return data[skip:], nil
			}
			skip = it.Pos()
		}
		pos += int64(len(data))
	}
	return nil, fmt.Errorf("%w: the segment at offset %d ends before offset %d", errRemoteRead, ref.BaseOffset, offset)
}

// readRemoteAt reads whole batches of a remote segment from byte pos on:
// about maxBytes, at least one batch.
func readRemoteAt(ctx context.Context, hc *http.Client, ref *pb.RemoteSegmentRef, pos int64, maxBytes int) ([]byte, error) {
	left := ref.Bytes - pos
	n := min(int64(max(maxBytes, record.HeaderSize)), left)
	data, err := getRange(ctx, hc, ref.Url, pos, n)
	if err != nil {
		return nil, err
	}
	whole, partial := record.WholeBatches(data)
	if whole == 0 && partial > 0 && int64(partial) <= left {
		if data, err = getRange(ctx, hc, ref.Url, pos, int64(partial)); err != nil {
			return nil, err
		}
		whole, _ = record.WholeBatches(data)
	}
	if whole == 0 {
		return nil, fmt.Errorf("%w: no whole batch at byte %d of the segment at offset %d", errRemoteRead, pos, ref.BaseOffset)
	}
	return data[:whole], nil
}

// getRange GETs n bytes of url from offset on.
func getRange(ctx context.Context, hc *http.Client, url string, offset, n int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errRemoteRead, err)
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", offset, offset+n-1))
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errRemoteRead, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent && resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%w: HTTP %s: %s", errRemoteRead, resp.Status, strings.TrimSpace(string(msg)))
	}
	if resp.StatusCode == http.StatusOK && offset > 0 {
		// A server that ignored the range sends the whole object.
		if _, err := io.CopyN(io.Discard, resp.Body, offset); err != nil {
			return nil, fmt.Errorf("%w: %v", errRemoteRead, err)
		}
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(resp.Body, data); err != nil {
		return nil, fmt.Errorf("%w: %v", errRemoteRead, err)
	}
	return data, nil
}
