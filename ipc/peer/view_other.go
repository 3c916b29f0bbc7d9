//go:build !unix

package peer

// View decides what one caller may read. Where credentials and Unix
// permissions are not available it grants nothing: the server then serves
// only a private socket, whose callers see everything.
type View struct{ cred Cred }

// NewView returns a View for the caller c.
func NewView(c Cred) *View { return &View{cred: c} }

// CanRead reports false: no file can be judged here.
func (v *View) CanRead(string) bool { return false }

// Indexed is what the index recorded of a file (see the Unix View).
type Indexed struct {
	Dev, Ino uint64
	CtimeNs  int64
}

// CanReadIndexed reports false: no file can be judged here.
func (v *View) CanReadIndexed(string, Indexed) bool { return false }

// CanList reports false: no directory can be judged here.
func (v *View) CanList(string) bool { return false }
