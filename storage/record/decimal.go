package record

import (
	"encoding/binary"
	"math/big"
	"math/bits"
)

// Decimal arithmetic without allocation. DECIMAL values have at most 38
// digits, so their unscaled magnitudes fit 127 bits; uint128 holds one, and a
// sign travels beside it.

// uint128 is an unsigned 128-bit integer.
type uint128 struct{ hi, lo uint64 }

func (x uint128) isZero() bool { return x.hi == 0 && x.lo == 0 }

// less reports whether x < y.
func (x uint128) less(y uint128) bool {
	return x.hi < y.hi || (x.hi == y.hi && x.lo < y.lo)
}

// mulAdd returns x*m + a and whether it overflowed 128 bits.
func (x uint128) mulAdd(m, a uint64) (uint128, bool) {
	carryHi, lo := bits.Mul64(x.lo, m)
	overHi, hi := bits.Mul64(x.hi, m)
	hi, c1 := bits.Add64(hi, carryHi, 0)
	lo, c2 := bits.Add64(lo, a, 0)
	hi, c3 := bits.Add64(hi, 0, c2)
	return uint128{hi: hi, lo: lo}, overHi != 0 || c1 != 0 || c3 != 0
}

// divMod10 returns x/10 and x%10.
func (x uint128) divMod10() (uint128, uint64) {
	q := uint128{hi: x.hi / 10}
	var r uint64
	q.lo, r = bits.Div64(x.hi%10, x.lo, 10)
	return q, r
}

// negate returns the two's complement of x modulo 2^128.
func (x uint128) negate() uint128 {
	lo, borrow := bits.Sub64(0, x.lo, 0)
	hi, _ := bits.Sub64(0, x.hi, borrow)
	return uint128{hi: hi, lo: lo}
}

// pow10u128 returns 10^n for 0 ≤ n ≤ 38.
func pow10u128(n int) uint128 {
	x := uint128{lo: 1}
	for range n {
		x, _ = x.mulAdd(10, 0)
	}
	return x
}

// pow10int64 returns 10^n for 0 ≤ n ≤ 18.
func pow10int64(n int) int64 {
	x := int64(1)
	for range n {
		x *= 10
	}
	return x
}

// fitsDecimalPrecision reports whether a magnitude has at most precision
// decimal digits.
func fitsDecimalPrecision(mag uint128, precision int) bool {
	return mag.less(pow10u128(precision))
}

// magnitudeOfInt64 splits v into sign and magnitude.
func magnitudeOfInt64(v int64) (neg bool, mag uint128) {
	if v < 0 {
		return true, uint128{lo: uint64(-v)} // -MinInt64 wraps to 2^63, as wanted
	}
	return false, uint128{lo: uint64(v)}
}

// int64OfMagnitude returns the signed value of sign and magnitude if it fits
// an int64.
func int64OfMagnitude(neg bool, mag uint128) (int64, bool) {
	if mag.hi != 0 {
		return 0, false
	}
	if neg {
		if mag.lo > 1<<63 {
			return 0, false
		}
		return -int64(mag.lo), true // -(2^63) wraps to MinInt64, as wanted
	}
	if mag.lo > 1<<63-1 {
		return 0, false
	}
	return int64(mag.lo), true
}

// redundantSignByte reports whether b0 only sign-extends the byte b1 after it
// in a big-endian two's complement number.
func redundantSignByte(b0, b1 byte) bool {
	return (b0 == 0x00 && b1&0x80 == 0) || (b0 == 0xff && b1&0x80 != 0)
}

// isMinimalTwos reports whether b is a big-endian two's complement number of
// 1 to 16 bytes without redundant leading sign bytes.
func isMinimalTwos(b []byte) bool {
	return len(b) >= 1 && len(b) <= 16 && (len(b) == 1 || !redundantSignByte(b[0], b[1]))
}

// appendTwos appends the minimal big-endian two's complement form of the
// value with sign neg and magnitude mag (at most 2^127).
func appendTwos(dst []byte, neg bool, mag uint128) []byte {
	v := mag
	if neg {
		v = mag.negate()
	}
	var buf [16]byte
	binary.BigEndian.PutUint64(buf[:8], v.hi)
	binary.BigEndian.PutUint64(buf[8:], v.lo)
	i := 0
	for i < 15 && redundantSignByte(buf[i], buf[i+1]) {
		i++
	}
	return append(dst, buf[i:]...)
}

// decodeTwos decodes 1 to 16 bytes of big-endian two's complement, minimal or
// not, into sign and magnitude.
func decodeTwos(b []byte) (neg bool, mag uint128, ok bool) {
	if len(b) == 0 || len(b) > 16 {
		return false, uint128{}, false
	}
	var buf [16]byte
	if b[0]&0x80 != 0 {
		neg = true
		for i := range 16 - len(b) {
			buf[i] = 0xff
		}
	}
	copy(buf[16-len(b):], b)
	v := uint128{hi: binary.BigEndian.Uint64(buf[:8]), lo: binary.BigEndian.Uint64(buf[8:])}
	if neg {
		v = v.negate()
	}
	return neg, v, true
}

// magnitudeOfBig splits x into sign and magnitude if |x| < 2^127.
func magnitudeOfBig(x *big.Int) (neg bool, mag uint128, ok bool) {
	if x.BitLen() > 127 {
		return false, uint128{}, false
	}
	var abs big.Int
	abs.Abs(x)
	lo := abs.Uint64()
	abs.Rsh(&abs, 64)
	return x.Sign() < 0, uint128{hi: abs.Uint64(), lo: lo}, true
}

// bigOfMagnitude returns the value with sign neg and magnitude mag.
func bigOfMagnitude(neg bool, mag uint128) *big.Int {
	x := new(big.Int).SetUint64(mag.hi)
	x.Lsh(x, 64)
	x.Or(x, new(big.Int).SetUint64(mag.lo))
	if neg {
		x.Neg(x)
	}
	return x
}

// appendDecimalText appends sign and magnitude mag scaled down by scale
// digits, in plain notation with exactly scale fractional digits ("-0.05").
func appendDecimalText(dst []byte, neg bool, mag uint128, scale int) []byte {
	var buf [40]byte
	i := len(buf)
	if neg && !mag.isZero() {
		dst = append(dst, '-')
	}
	for {
		var r uint64
		mag, r = mag.divMod10()
		i--
		buf[i] = byte('0' + r)
		if mag.isZero() {
			break
		}
	}
	digits := buf[i:]
	if scale <= 0 {
		return append(dst, digits...)
	}
	if len(digits) <= scale {
		dst = append(dst, '0', '.')
		for range scale - len(digits) {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	dst = append(dst, digits[:len(digits)-scale]...)
	dst = append(dst, '.')
	return append(dst, digits[len(digits)-scale:]...)
}

// decimalLiteral is a number in decimal notation, split into its parts:
// (-1 if neg) × intPart.fracPart × 10^exp.
type decimalLiteral struct {
	neg      bool
	intPart  []byte
	fracPart []byte
	exp      int64 // saturated to ±2^40, far beyond any usable value
}

// parseDecimalLiteral parses [sign] digits [. digits] [(e|E) [sign] digits],
// where one of the digit runs around the point may be empty but not both.
// A leading '+' is accepted only when allowPlus is set (JSON numbers have
// none).
func parseDecimalLiteral(s []byte, allowPlus bool) (decimalLiteral, bool) {
	var d decimalLiteral
	i := 0
	if i < len(s) && (s[i] == '-' || (allowPlus && s[i] == '+')) {
		d.neg = s[i] == '-'
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	d.intPart = s[start:i]
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		d.fracPart = s[start:i]
	}
	if len(d.intPart)+len(d.fracPart) == 0 {
		return d, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		expNeg := false
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			expNeg = s[i] == '-'
			i++
		}
		start = i
		for i < len(s) && isDigit(s[i]) {
			if d.exp < 1<<40 {
				d.exp = d.exp*10 + int64(s[i]-'0')
			}
			i++
		}
		if i == start {
			return d, false
		}
		if expNeg {
			d.exp = -d.exp
		}
	}
	return d, i == len(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digit returns the k-th digit of intPart followed by fracPart.
func (d decimalLiteral) digit(k int) byte {
	if k < len(d.intPart) {
		return d.intPart[k]
	}
	return d.fracPart[k-len(d.intPart)]
}

// scaleResult says why decimalLiteral.scaled failed.
type scaleResult uint8

const (
	scaleOK       scaleResult = iota
	scaleFraction             // more fractional digits than the scale allows
	scaleTooLarge             // more digits than maxDigits
)

// scaled returns |d| × 10^scale if that is an integer of at most maxDigits
// digits (maxDigits ≤ 38). Trailing zeros never count against the scale.
func (d decimalLiteral) scaled(scale, maxDigits int) (uint128, scaleResult) {
	n := len(d.intPart) + len(d.fracPart)
	first := 0
	for first < n && d.digit(first) == '0' {
		first++
	}
	if first == n {
		return uint128{}, scaleOK
	}
	last := n
	for d.digit(last-1) == '0' {
		last--
	}
	// |d| = digits[first:last] × 10^shift / 10^scale
	shift := d.exp - int64(len(d.fracPart)) + int64(n-last) + int64(scale)
	if shift < 0 {
		return uint128{}, scaleFraction
	}
	if int64(last-first)+shift > int64(maxDigits) {
		return uint128{}, scaleTooLarge
	}
	var mag uint128
	for k := first; k < last; k++ {
		mag, _ = mag.mulAdd(10, uint64(d.digit(k)-'0'))
	}
	for range shift {
		mag, _ = mag.mulAdd(10, 0)
	}
	return mag, scaleOK
}
