package shaper

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseRate parses a rate in bit/s as tc writes it: a non-negative number
// with an optional unit, case-insensitive: bit (or none), kbit, mbit, gbit,
// tbit (decimal: 1kbit = 1000 bit/s), also with a "/s" suffix ("30Mbit/s").
// Byte units (tc's "bps", "kbps", ...) are refused to avoid tc's ambiguity.
// Fractions are allowed ("1.5mbit").
func ParseRate(s string) (uint64, error) {
	in := strings.TrimSpace(s)
	low := strings.TrimSuffix(strings.ToLower(in), "/s")
	i := strings.IndexFunc(low, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') })
	num, unit := low, ""
	if i >= 0 {
		num, unit = low[:i], strings.TrimSpace(low[i:])
	}
	if num == "" {
		return 0, fmt.Errorf("invalid rate %q: want a non-negative number with a unit (bit, kbit, mbit, gbit, tbit)", s)
	}
	if zeroPadded(num) {
		return 0, fmt.Errorf("invalid rate %q: zero-padded number (write it without leading zeros)", s)
	}
	var mul float64
	switch unit {
	case "", "bit":
		mul = 1
	case "kbit", "k":
		mul = 1e3
	case "mbit", "m":
		mul = 1e6
	case "gbit", "g":
		mul = 1e9
	case "tbit", "t":
		mul = 1e12
	default:
		return 0, fmt.Errorf("invalid rate %q: unknown unit %q (want bit, kbit, mbit, gbit or tbit; byte units are not accepted)", s, unit)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("invalid rate %q: want a non-negative number with a unit (bit, kbit, mbit, gbit, tbit)", s)
	}
	r := v * mul
	if r > MaxRate {
		return 0, fmt.Errorf("invalid rate %q: above %s", s, FormatRate(MaxRate))
	}
	return uint64(r + 0.5), nil
}

// FormatRate formats bit/s as tc does when exact: "30mbit", "500kbit",
// "1234bit".
func FormatRate(v uint64) string {
	switch {
	case v != 0 && v%1_000_000_000 == 0:
		return fmt.Sprintf("%dgbit", v/1_000_000_000)
	case v != 0 && v%1_000_000 == 0:
		return fmt.Sprintf("%dmbit", v/1_000_000)
	case v != 0 && v%1_000 == 0:
		return fmt.Sprintf("%dkbit", v/1_000)
	}
	return fmt.Sprintf("%dbit", v)
}

// ParseSize parses a size in bytes as tc writes it: a non-negative integer
// with an optional unit b, k/kb (1024), m/mb (1024²).
func ParseSize(s string) (uint32, error) {
	low := strings.ToLower(strings.TrimSpace(s))
	mul := uint64(1)
	for _, u := range []struct {
		suf string
		m   uint64
	}{{"kb", 1024}, {"mb", 1 << 20}, {"k", 1024}, {"m", 1 << 20}, {"b", 1}} {
		if strings.HasSuffix(low, u.suf) {
			low, mul = strings.TrimSuffix(low, u.suf), u.m
			break
		}
	}
	if zeroPadded(low) {
		return 0, fmt.Errorf("invalid size %q: zero-padded number (write it without leading zeros)", s)
	}
	v, err := strconv.ParseUint(low, 10, 32)
	if err != nil || v*mul > 1<<31 {
		return 0, fmt.Errorf("invalid size %q: want a non-negative integer of bytes with an optional unit (b, k, m)", s)
	}
	return uint32(v * mul), nil
}

// FormatSize formats bytes as tc does: "32k" when a multiple of 1024.
func FormatSize(v uint32) string {
	if v != 0 && v%(1<<20) == 0 {
		return fmt.Sprintf("%dm", v>>20)
	}
	if v != 0 && v%1024 == 0 {
		return fmt.Sprintf("%dk", v>>10)
	}
	return fmt.Sprintf("%db", v)
}

// Rate is a rate in bit/s whose text is tc's notation: UnmarshalText reads
// what ParseRate does ("30mbit", "1.5Mbit/s", "1200"), MarshalText and
// String write what FormatRate does ("30mbit").
type Rate uint64

// String returns the rate in tc's notation ("30mbit").
func (r Rate) String() string { return FormatRate(uint64(r)) }

// MarshalText writes the rate as String does.
func (r Rate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a rate as ParseRate does, with its errors; r is left
// as it was on an error.
func (r *Rate) UnmarshalText(text []byte) error {
	v, err := ParseRate(string(text))
	if err != nil {
		return err
	}
	*r = Rate(v)
	return nil
}

// Size is a size in bytes whose text is tc's notation: UnmarshalText reads
// what ParseSize does ("32k", "1514"), MarshalText and String write what
// FormatSize does ("32k", "1514b").
type Size uint32

// String returns the size in tc's notation ("32k").
func (z Size) String() string { return FormatSize(uint32(z)) }

// MarshalText writes the size as String does.
func (z Size) MarshalText() ([]byte, error) { return []byte(z.String()), nil }

// UnmarshalText reads a size as ParseSize does, with its errors; z is left
// as it was on an error.
func (z *Size) UnmarshalText(text []byte) error {
	v, err := ParseSize(string(text))
	if err != nil {
		return err
	}
	*z = Size(v)
	return nil
}

// ParseUint parses a non-negative integer of at most bits bits, written in
// decimal or with an explicit base prefix: 0x (hex) or 0o (octal). A
// zero-padded number ("010") is refused rather than read as octal, the way
// C and YAML 1.1 would: a mark written 010 must not silently become 8.
func ParseUint(s string, bits int) (uint64, error) {
	in := strings.TrimSpace(s)
	digits, base := in, 10
	if len(in) > 2 && in[0] == '0' {
		switch in[1] {
		case 'x', 'X':
			digits, base = in[2:], 16
		case 'o', 'O':
			digits, base = in[2:], 8
		}
	}
	if base == 10 && zeroPadded(in) {
		return 0, fmt.Errorf("invalid value %q: zero-padded number (decimal without leading zeros, or 0x/0o for hex/octal)", s)
	}
	// strconv's base-specific parsing refuses signs, underscores and
	// further prefixes, which base 0 would accept.
	if digits == "" || digits[0] == '+' || digits[0] == '-' {
		return 0, fmt.Errorf("invalid value %q: want a non-negative integer below 2^%d", s, bits)
	}
	v, err := strconv.ParseUint(digits, base, bits)
	if err != nil {
		return 0, fmt.Errorf("invalid value %q: want a non-negative integer below 2^%d (decimal, 0x hex or 0o octal)", s, bits)
	}
	return v, nil
}

// zeroPadded reports whether a decimal number starts with a 0 followed by
// another digit ("010", "007.5").
func zeroPadded(num string) bool {
	return len(num) > 1 && num[0] == '0' && num[1] >= '0' && num[1] <= '9'
}
