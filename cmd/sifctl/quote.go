package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// File names in text output, quoted as GNU ls quotes them by default on a
// terminal (--quoting-style=shell-escape, in a UTF-8 locale): a name a
// shell takes as one word is printed as it is; any other is single-quoted,
// with each ' written '\'' and each control character, byte that is not
// UTF-8 or other unprintable character written in a $'...' segment
// ($'\n', $'\303'). The text output then stays one name per line, and a
// name can be pasted into a shell. --null prints names raw instead.

// quoteName returns name as `ls --quoting-style=shell-escape` prints it.
func quoteName(name string) string {
	if !needsQuotes(name) {
		return name
	}
	// A name whose only trouble is an apostrophe, spaces or a leading # or
	// ~ is double-quoted, as ls does: "don't" rather than 'don'\''t'.
	if strings.Contains(name, "'") && doubleQuotable(name) {
		return `"` + name + `"`
	}
	var b strings.Builder
	b.WriteByte('\'')
	escaping := false // within a $'...' segment
	for i := 0; i < len(name); {
		r, n := utf8.DecodeRuneInString(name[i:])
		switch {
		case !printable(r, n):
			if !escaping {
				b.WriteString(`'$'`)
				escaping = true
			}
			writeEscaped(&b, name[i:i+n])
		case r == '\'':
			// Closes the quoted (or $'...') segment, then an escaped '
			// and a new quoted segment.
			b.WriteString(`'\''`)
			escaping = false
		default:
			if escaping {
				b.WriteString(`''`)
				escaping = false
			}
			b.WriteString(name[i : i+n])
		}
		i += n
	}
	b.WriteByte('\'')
	return b.String()
}

// needsQuotes reports whether a shell would not take name as one word
// standing for itself, by the rules of GNU's quotearg: an empty name;
// one with a shell-special character, a space, a quote or backslash, or
// something unprintable; one starting with # or ~; a lone { or }.
func needsQuotes(name string) bool {
	if name == "" || name == "{" || name == "}" {
		return true
	}
	for i := 0; i < len(name); {
		r, n := utf8.DecodeRuneInString(name[i:])
		switch {
		case !printable(r, n):
			return true
		case r == '#' || r == '~':
			if i == 0 {
				return true
			}
		case r < utf8.RuneSelf && strings.ContainsRune(" !\"$&'()*;<=>?[\\^`|", r):
			return true
		}
		i += n
	}
	return false
}

// doubleQuotable reports whether name holds only what needs no escape
// within double quotes either: letters, digits, printable non-ASCII
// characters, spaces, apostrophes, %+,-./:@]_ and a leading # or ~.
func doubleQuotable(name string) bool {
	for i, r := range name {
		switch {
		case r >= utf8.RuneSelf:
			if !printable(r, utf8.RuneLen(r)) {
				return false
			}
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("%+,-./:@]_ '", r):
		case (r == '#' || r == '~') && i == 0:
		default:
			return false
		}
	}
	return true
}

// printable reports whether the rune r, n bytes of UTF-8, is printed as
// it is, as glibc's iswprint judges in a UTF-8 locale: not a control
// character, line or paragraph separator, surrogate, unassigned code
// point or byte that is not UTF-8 (utf8.RuneError of 1 byte).
func printable(r rune, n int) bool {
	if r == utf8.RuneError && n == 1 {
		return false
	}
	return unicode.IsGraphic(r) || unicode.In(r, unicode.Cf, unicode.Co)
}

// cEscapes are the control characters ls writes as C escapes; it writes
// any other unprintable byte in octal.
var cEscapes = map[byte]string{'\a': `\a`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`, '\v': `\v`}

// writeEscaped writes the bytes of an unprintable character as they go in
// a $'...' segment.
func writeEscaped(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if e, ok := cEscapes[s[i]]; ok {
			b.WriteString(e)
		} else {
			fmt.Fprintf(b, `\%03o`, s[i])
		}
	}
}
