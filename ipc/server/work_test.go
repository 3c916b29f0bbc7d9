package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
)

// slowGroups is a backend whose groups run notes a step in its Progress
// and waits to be let go.
type slowGroups struct {
	fakeBackend
	at      chan struct{} // closed once the step is noted
	letGo   chan struct{}
	tracked bool
}

func (s *slowGroups) EachGroup(_ context.Context, o index.GroupOptions, _ func(index.Group) error) error {
	s.tracked = o.Progress != nil
	o.Progress.Begin("linking similar files, pass 2 of at least 3")
	o.Progress.SetDone(0.25)
	close(s.at)
	<-s.letGo
	return nil
}

// A groups request named by request_id is reported on by GET /v1/work
// while it runs, and not after; an unnamed one is not tracked; a bad name
// is refused, as an id nobody runs is not found.
func TestWorkReportsRunningGroups(t *testing.T) {
	b := &slowGroups{at: make(chan struct{}), letGo: make(chan struct{})}
	c := serve(t, b)
	ctx := context.Background()
	id := ipc.NewRequestID()
	if !ipc.ValidRequestID(id) {
		t.Fatalf("NewRequestID made %q, which ValidRequestID refuses", id)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.GroupsEach(ctx, ipc.GroupsOptions{RequestID: id}, func(ipc.Group) error { return nil })
		done <- err
	}()
	<-b.at
	w, err := c.Work(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if w.ID != id || w.Step != "linking similar files, pass 2 of at least 3" || w.Done != 0.25 || w.ElapsedNs <= 0 || w.StepElapsedNs <= 0 || w.StepElapsedNs > w.ElapsedNs+int64(time.Millisecond) {
		t.Errorf("work of a running request: %+v", w)
	}
	close(b.letGo)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !b.tracked {
		t.Error("the groups run was given no Progress")
	}
	var e *ipc.Error
	if _, err := c.Work(ctx, id); !errors.As(err, &e) || e.Code != ipc.CodeNotFound {
		t.Errorf("work of an answered request: %v, want not_found", err)
	}

	b.at, b.letGo = make(chan struct{}), make(chan struct{})
	close(b.letGo)
	if _, err := c.GroupsEach(ctx, ipc.GroupsOptions{}, func(ipc.Group) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if b.tracked {
		t.Error("a request without request_id was tracked")
	}
	b.at = make(chan struct{})
	_, err = c.GroupsEach(ctx, ipc.GroupsOptions{RequestID: "no spaces"}, func(ipc.Group) error { return nil })
	if !errors.As(err, &e) || e.Code != ipc.CodeBadRequest || e.Message != `request_id "no spaces": want 1 to 64 letters, digits and dashes` {
		t.Errorf("a bad request_id: %v", err)
	}
}
