package fingerprint

// typeSniff is how many leading bytes of a stream decide its [Type].
const typeSniff = 8 << 10

// typer classifies a stream as text or binary from its first 8 KiB, the way
// git and grep do: binary if they hold a NUL byte or if more than 10 % of
// them are control bytes (0x01–0x1f and 0x7f) other than \t \n \v \f \r \b
// and ESC. Bytes at or above 0x80 count as text, so UTF-8 and the Latin
// encodings are text. An empty stream is text.
type typer struct {
	n    int  // bytes looked at, at most typeSniff
	ctrl int  // control bytes among them
	nul  bool // a NUL byte among them
}

// isCtrl marks the control bytes that suggest binary content.
var isCtrl = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t[0x7f] = true
	for _, c := range []byte{'\t', '\n', '\v', '\f', '\r', '\b', 0x1b} {
		t[c] = false
	}
	return t
}()

func (t *typer) reset() { *t = typer{} }

// write looks at b, which continues the stream.
func (t *typer) write(b []byte) {
	if t.n >= typeSniff {
		return
	}
	b = b[:min(len(b), typeSniff-t.n)]
	t.n += len(b)
	for _, c := range b {
		if c == 0 {
			t.nul = true
		}
		if isCtrl[c] {
			t.ctrl++
		}
	}
}

// typ returns the type of the stream seen so far.
func (t *typer) typ() Type {
	if t.nul || t.ctrl*10 > t.n {
		return TypeBinary
	}
	return TypeText
}
