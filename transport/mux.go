package transport

import (
	"reflect"

	"storj.io/drpc"
	"storj.io/drpc/drpcmux"
)

// Mux is where a Server's services register, through the generated
// pb.DRPCRegister functions. Besides routing calls it notes which RPCs are
// unary, so the server sends a unary reply and the end of its stream in one
// write instead of two.
type Mux struct {
	mux *drpcmux.Mux
	// unary holds the unary RPCs. Written by Register, which comes before
	// Serve; only read after.
	unary map[string]bool
}

func newMux() *Mux { return &Mux{mux: drpcmux.New(), unary: map[string]bool{}} }

// Register registers the methods of srv that desc describes.
func (m *Mux) Register(srv any, desc drpc.Description) error {
	if err := m.mux.Register(srv, desc); err != nil {
		return err
	}
	for i := range desc.NumMethods() {
		rpc, _, _, method, ok := desc.Method(i)
		if !ok {
			continue
		}
		// A unary method returns its reply and an error; a streaming one
		// returns only the error and sends on its stream.
		if t := reflect.TypeOf(method); t != nil && t.Kind() == reflect.Func && t.NumOut() == 2 {
			m.unary[rpc] = true
		}
	}
	return nil
}

// HandleRPC routes a call to its method.
func (m *Mux) HandleRPC(stream drpc.Stream, rpc string) error { return m.mux.HandleRPC(stream, rpc) }
