package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pickyman/pickyman/agent/pkg/protocol"
)

// Server serves the local API on a Unix socket.
type Server struct {
	Registry *Registry
	Resolver PodResolver
	// PeerPID reads the peer's pid from a connection; nil selects SO_PEERCRED (PeerPID).
	PeerPID func(*net.UnixConn) (int32, error)
	// Errors counts failed calls by code, for metrics; may be nil.
	Errors func(code protocol.ErrorCode)

	sessions atomic.Uint64
	wg       sync.WaitGroup
}

// Listen creates the socket at path (replacing a stale one), readable and writable by
// everyone: training containers run as arbitrary users, and the peer credentials decide what
// a caller may do.
func Listen(path string) (*net.UnixListener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o666); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Serve accepts connections until ctx ends, then closes l and waits for the connections.
func (s *Server) Serve(ctx context.Context, l *net.UnixListener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { <-ctx.Done(); l.Close() }()
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			s.wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(ctx, c)
		}()
	}
}

// serveConn authenticates the peer, then answers one response per request line.
func (s *Server) serveConn(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	caller := Caller{Session: s.sessions.Add(1)}
	w := bufio.NewWriter(c)
	peer := s.PeerPID
	if peer == nil {
		peer = PeerPID
	}
	pid, err := peer(c)
	if err == nil {
		caller.PID = pid
		caller.PodUID, err = s.Resolver.PodUID(pid)
	}
	var authErr *Error
	if err != nil {
		authErr = errf(protocol.ErrUnknownPod, "cannot identify the calling process: %v", err)
	}
	defer s.Registry.Disconnect(caller)

	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 4096), protocol.MaxLine)
	for sc.Scan() {
		var resp protocol.Response
		if authErr != nil {
			resp = s.fail(authErr)
		} else {
			resp = s.handle(ctx, caller, sc.Bytes())
		}
		if err := writeLine(w, resp); err != nil {
			return
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		_ = writeLine(w, s.fail(errf(protocol.ErrMalformed, "request longer than %d bytes", protocol.MaxLine)))
	}
}

func writeLine(w *bufio.Writer, resp protocol.Response) error {
	b, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	if err := w.WriteByte('\n'); err != nil {
		return err
	}
	return w.Flush()
}

func (s *Server) fail(err error) protocol.Response {
	var e *Error
	if !errors.As(err, &e) {
		e = errf(protocol.ErrMalformed, "%v", err)
	}
	if s.Errors != nil {
		s.Errors(e.Code)
	}
	return protocol.Response{Code: e.Code, Error: e.Msg}
}

// decode parses one request line strictly: known fields only, one JSON object.
func decode(line []byte) (protocol.Request, error) {
	var req protocol.Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, errf(protocol.ErrMalformed, "bad request: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, errf(protocol.ErrMalformed, "bad request: trailing data after the JSON object")
	}
	return req, nil
}

// handle runs one request.
func (s *Server) handle(ctx context.Context, c Caller, line []byte) protocol.Response {
	req, err := decode(line)
	if err != nil {
		return s.fail(err)
	}
	if err := checkFields(req); err != nil {
		return s.fail(err)
	}
	switch req.Op {
	case protocol.OpRegister:
		rp, err := s.Registry.Register(c, req.Pod, req.Rank, req.WorldSize)
		if err != nil {
			return s.fail(err)
		}
		return protocol.Response{OK: true, Resume: &rp}
	case protocol.OpEpochBegin:
		err = s.Registry.EpochBegin(c, req.Epoch)
	case protocol.OpEpochEnd:
		err = s.Registry.EpochEnd(c, req.Epoch, req.Samples, req.Bytes)
	case protocol.OpPoll:
		cr, err := s.Registry.Poll(ctx, c, time.Duration(req.WaitMS)*time.Millisecond)
		if err != nil {
			return s.fail(err)
		}
		return protocol.Response{OK: true, Checkpoint: cr}
	case protocol.OpCheckpointDone:
		err = s.Registry.CheckpointDone(c, req.RequestID, req.Epoch, req.Path, req.Bytes, req.Seconds)
	case protocol.OpResumePoint:
		rp, err := s.Registry.ResumePoint(c)
		if err != nil {
			return s.fail(err)
		}
		return protocol.Response{OK: true, Resume: &rp}
	}
	if err != nil {
		return s.fail(err)
	}
	return protocol.Response{OK: true}
}

// checkFields rejects unknown ops and fields that do not belong to the op.
func checkFields(r protocol.Request) error {
	type fields struct {
		pod, rank, epoch, samples, bytes, wait, id, path, seconds bool
	}
	allowed := map[protocol.Op]fields{
		protocol.OpRegister:       {pod: true, rank: true},
		protocol.OpEpochBegin:     {epoch: true},
		protocol.OpEpochEnd:       {epoch: true, samples: true, bytes: true},
		protocol.OpPoll:           {wait: true},
		protocol.OpCheckpointDone: {epoch: true, bytes: true, id: true, path: true, seconds: true},
		protocol.OpResumePoint:    {},
	}
	a, ok := allowed[r.Op]
	if !ok {
		return errf(protocol.ErrMalformed, "unknown op %q", r.Op)
	}
	bad := func(set, ok bool, name string) error {
		if set && !ok {
			return errf(protocol.ErrMalformed, "field %s is not allowed in %s", name, r.Op)
		}
		return nil
	}
	return errors.Join(
		bad(r.Pod != "", a.pod, "pod"),
		bad(r.Rank != 0 || r.WorldSize != 0, a.rank, "rank/world_size"),
		bad(r.Epoch != 0, a.epoch, "epoch"),
		bad(r.Samples != 0, a.samples, "samples"),
		bad(r.Bytes != 0, a.bytes, "bytes"),
		bad(r.WaitMS != 0, a.wait, "wait_ms"),
		bad(r.RequestID != "", a.id, "request_id"),
		bad(r.Path != "", a.path, "path"),
		bad(r.Seconds != 0, a.seconds, "seconds"),
		func() error {
			if r.Op == protocol.OpCheckpointDone && r.RequestID == "" {
				return errf(protocol.ErrMalformed, "checkpoint_done needs request_id")
			}
			return nil
		}(),
	)
}

// String renders a caller for logs.
func (c Caller) String() string { return fmt.Sprintf("pid %d (pod %s)", c.PID, c.PodUID) }
