package snapshot

import (
	"context"
	"errors"
	"fmt"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/interrupt"
	"io"
	"io/fs"
	"os"
)

// DefaultMaxInputSize bounds each input (a file, stdin, a rendered
// kustomization, an --instance-types file) when Input.MaxInputSize is 0:
// 256 MiB, some 50 times the 50,000-pod benchmark's manifests. Endless or
// huge input (/dev/zero, a runaway pipe) stops there with a SizeError
// instead of growing the process's memory until the machine runs out.
const DefaultMaxInputSize int64 = 256 << 20

// MaxInputSizeFlag is the flag that raises the limit, named in SizeError.
const MaxInputSizeFlag = "--max-input-size"

// SizeError is an input larger than the limit.
type SizeError struct {
	Name  string // file name, "<stdin>" or "kustomization DIR"
	Limit int64
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("%s: larger than the %s limit (%s)", e.Name, FormatSize(e.Limit), MaxInputSizeFlag)
}

// FormatSize writes n bytes as the largest binary unit that divides it
// ("256 MiB", "1 GiB", "1500 B").
func FormatSize(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// limitOrDefault is limit, or DefaultMaxInputSize when it is not positive.
func limitOrDefault(limit int64) int64 {
	if limit <= 0 {
		return DefaultMaxInputSize
	}
	return limit
}

// readChunk is how much ReadAll reads at a time; between chunks it checks
// ctx.
const readChunk = 1 << 20

// ReadAll reads r to its end, or fails with a *SizeError naming name once
// more than limit bytes (DefaultMaxInputSize when 0) came, or with ctx's
// error once ctx ends (checked between reads of at most 1 MiB; a read that
// blocks is not interrupted, main's signal handling covers that). Memory is
// the input's size once over: the data is kept in chunks and joined only
// when the end is reached within the limit.
func ReadAll(ctx context.Context, name string, r io.Reader, limit int64) ([]byte, error) {
	limit = limitOrDefault(limit)
	interrupt.Doing(ctx, "reading %s", name)
	var chunks [][]byte
	var total int64
	for {
		if err := interrupt.Err(ctx); err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		buf := make([]byte, readChunk)
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			total += int64(n)
			if total > limit {
				return nil, &SizeError{Name: name, Limit: limit}
			}
			chunks = append(chunks, buf[:n])
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
	}
	if len(chunks) == 1 {
		return chunks[0], nil
	}
	out := make([]byte, 0, total)
	for _, c := range chunks {
		out = append(out, c...)
	}
	return out, nil
}

// ReadFile reads the file name as ReadAll reads a stream. A regular file
// larger than limit is refused before it is read; anything else named
// explicitly (a device, a FIFO, /dev/stdin, a symlink to one) is read
// through the limit.
func ReadFile(ctx context.Context, name string, limit int64) ([]byte, error) {
	limit = limitOrDefault(limit)
	interrupt.Doing(ctx, "reading %s", name)
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, unwrapPath(err))
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, unwrapPath(err))
	}
	if info.IsDir() {
		return nil, fmt.Errorf("reading %s: is a directory", name)
	}
	if info.Mode().IsRegular() {
		if info.Size() > limit {
			return nil, &SizeError{Name: name, Limit: limit}
		}
		// The size is known: one allocation, as os.ReadFile; reading
		// still stops at the limit should the file grow meanwhile.
		return readSized(ctx, name, f, int(info.Size())+512, limit)
	}
	return ReadAll(ctx, name, f, limit)
}

// readSized reads r into one buffer of capacity size, growing it if r
// holds more, in reads of at most readChunk between which it checks ctx.
func readSized(ctx context.Context, name string, r io.Reader, size int, limit int64) ([]byte, error) {
	buf := make([]byte, 0, size)
	for {
		if err := interrupt.Err(ctx); err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), len(buf)+readChunk)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, &SizeError{Name: name, Limit: limit}
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, unwrapPath(err))
		}
	}
}

// unwrapPath drops the *fs.PathError around err, whose operation and path
// the caller's message already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fileKind names the kind of a non-regular file for messages.
func fileKind(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeCharDevice != 0:
		return "a character device"
	case mode&fs.ModeDevice != 0:
		return "a device"
	case mode&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "not a regular file"
}
