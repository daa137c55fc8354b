package backoff

import (
	"context"
	"testing"
	"time"
)

func TestDelaysDoubleToMaxAndReset(t *testing.T) {
	b := Backoff{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	want := []time.Duration{10, 20, 40, 50, 50}
	for i, w := range want {
		if got := b.Next(); got != w*time.Millisecond {
			t.Fatalf("wait %d: %v, want %v", i, got, w*time.Millisecond)
		}
	}
	b.Reset()
	if got := b.Next(); got != 10*time.Millisecond {
		t.Fatalf("after Reset: %v, want 10ms", got)
	}
}

func TestZeroValueDefaults(t *testing.T) {
	var b Backoff
	if got := b.Next(); got != defaultMin {
		t.Fatalf("first wait %v, want %v", got, defaultMin)
	}
	for range 10 {
		b.Next()
	}
	if got := b.Next(); got != defaultMax {
		t.Fatalf("capped wait %v, want %v", got, defaultMax)
	}
}

func TestJitterStaysInHalfToFull(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: 100 * time.Millisecond, Jitter: true}
	for range 1000 {
		if d := b.Next(); d < 50*time.Millisecond || d > 100*time.Millisecond {
			t.Fatalf("jittered wait %v outside [50ms, 100ms]", d)
		}
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b := Backoff{Min: time.Hour}
	if b.Wait(ctx) {
		t.Fatal("Wait on an ended context reported true")
	}
}
