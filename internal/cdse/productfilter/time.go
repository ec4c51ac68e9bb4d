package productfilter

import "time"

// parseDateTime reads the date-times of filters and entities:
// 2022-05-03T00:00:00.000Z, with 0 to 9 fractional digits, seconds
// optional, Z, an offset (+02:00) or no zone (UTC, as the catalogue has
// read it since 28 May 2024), and a bare date (2024-09-01, midnight UTC) as
// the catalogue's release notes write one. It is strict (no lowercase t or
// z, no leap second, no 31 February) and allocates nothing, which matters
// when reading the dates of every stored product.
func parseDateTime(s string) (time.Time, bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return time.Time{}, false
	}
	year, ok1 := num(s, 0, 4)
	month, ok2 := num(s, 5, 7)
	day, ok3 := num(s, 8, 10)
	if !ok1 || !ok2 || !ok3 || month < 1 || month > 12 || day < 1 {
		return time.Time{}, false
	}
	var hour, minute, sec, nsec, offset int
	i := 10
	if i < len(s) {
		if s[i] != 'T' || len(s) < i+6 || s[i+3] != ':' {
			return time.Time{}, false
		}
		var ok4, ok5 bool
		hour, ok4 = num(s, i+1, i+3)
		minute, ok5 = num(s, i+4, i+6)
		if !ok4 || !ok5 || hour > 23 || minute > 59 {
			return time.Time{}, false
		}
		i += 6
		if i < len(s) && s[i] == ':' {
			var ok bool
			if sec, ok = num(s, i+1, i+3); !ok || sec > 59 {
				return time.Time{}, false
			}
			i += 3
			if i < len(s) && s[i] == '.' {
				j := i + 1
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
				digits := j - i - 1
				if digits < 1 || digits > 9 {
					return time.Time{}, false
				}
				nsec, _ = num(s, i+1, j)
				for range 9 - digits {
					nsec *= 10
				}
				i = j
			}
		}
		switch {
		case i == len(s):
		case s[i] == 'Z' && i+1 == len(s):
		case (s[i] == '+' || s[i] == '-') && len(s) == i+6 && s[i+3] == ':':
			oh, ok6 := num(s, i+1, i+3)
			om, ok7 := num(s, i+4, i+6)
			if !ok6 || !ok7 || oh > 23 || om > 59 {
				return time.Time{}, false
			}
			offset = (oh*60 + om) * 60
			if s[i] == '-' {
				offset = -offset
			}
		default:
			return time.Time{}, false
		}
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Day() != day { // 31 February rolled over into March
		return time.Time{}, false
	}
	// Subtracting the offset rather than using a FixedZone keeps this
	// free of allocations; only the instant matters to comparisons.
	return t.Add(-time.Duration(offset) * time.Second), true
}

// num reads the decimal digits s[i:j].
func num(s string, i, j int) (int, bool) {
	if j > len(s) {
		return 0, false
	}
	n := 0
	for ; i < j; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
