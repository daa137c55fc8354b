package transport

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"net/netip"

	"github.com/xdg-go/scram"
	"storj.io/drpc"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/identity"
	"github.com/floedb/floe/transport/pb"
)

// ScramMechanism is the SASL mechanism Auth.Authenticate speaks.
const ScramMechanism = "SCRAM-SHA-256"

// errAuthFailed ends a failed exchange. It says nothing of why (no such
// user, wrong password, malformed message): a caller guessing names or
// passwords learns nothing from it.
var errAuthFailed = Errorf(pb.ErrorCode_ERROR_CODE_UNAUTHENTICATED, "authentication failed")

// authService serves Auth.Authenticate: a SCRAM-SHA-256 exchange after
// which the connection's calls are the user's.
type authService struct {
	sec     Security
	limiter *failureLimiter
	// decoy salts the credentials of users that do not exist, so their
	// exchange proceeds as a real one and fails only at the proof: the
	// answers do not tell which names exist.
	decoy []byte
}

func newAuthService(sec Security) *authService {
	decoy := make([]byte, 32)
	_, _ = rand.Read(decoy)
	return &authService{sec: sec, limiter: newFailureLimiter(sec.FailureLimit), decoy: decoy}
}

// Authenticate runs one exchange: client-first, server-first, client-final,
// server-final.
func (a *authService) Authenticate(stream pb.DRPCAuth_AuthenticateStream) error {
	p, _ := stream.Context().Value(peerKey{}).(*peer)
	if p == nil || a.sec.Credentials == nil {
		return Errorf(pb.ErrorCode_ERROR_CODE_UNAUTHENTICATED, "this node does not accept passwords: use a client certificate")
	}
	if !p.caller().Principal.IsAnonymous() {
		return Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "this connection is authenticated already, as %s", p.caller().Principal)
	}
	if !a.limiter.allowed(p.addr) {
		a.failed("rate_limited")
		return Errorf(pb.ErrorCode_ERROR_CODE_UNAUTHENTICATED,
			"too many failed authentications from %s; wait before trying again", p.addr)
	}
	principal, err := a.exchange(stream)
	if err != nil {
		a.limiter.failure(p.addr)
		a.failed("bad_credentials")
		var wire *Error
		if errors.As(err, &wire) && wire.Code != pb.ErrorCode_ERROR_CODE_UNAUTHENTICATED {
			return err // the stream failed (timeout, cancel), not the caller
		}
		return errAuthFailed
	}
	p.setPrincipal(principal)
	return nil
}

// exchange runs the SCRAM conversation and returns who it proved.
func (a *authService) exchange(stream pb.DRPCAuth_AuthenticateStream) (identity.Principal, error) {
	server, err := scram.SHA256.NewServer(a.lookup)
	if err != nil {
		return identity.Principal{}, errAuthFailed
	}
	conv := server.NewConversation()
	first, err := stream.Recv()
	if err != nil {
		return identity.Principal{}, ToWire(err)
	}
	if first.GetMechanism() != ScramMechanism {
		return identity.Principal{}, errAuthFailed
	}
	serverFirst, err := conv.Step(string(first.GetPayload()))
	if err != nil {
		return identity.Principal{}, errAuthFailed
	}
	if err := stream.Send(&pb.SaslMessage{Payload: []byte(serverFirst)}); err != nil {
		return identity.Principal{}, ToWire(err)
	}
	final, err := stream.Recv()
	if err != nil {
		return identity.Principal{}, ToWire(err)
	}
	serverFinal, err := conv.Step(string(final.GetPayload()))
	if err != nil || !conv.Valid() {
		return identity.Principal{}, errAuthFailed
	}
	name := conv.Username()
	if identity.ValidUserName(name) != nil {
		return identity.Principal{}, errAuthFailed
	}
	if err := stream.Send(&pb.SaslMessage{Payload: []byte(serverFinal), Done: true}); err != nil {
		return identity.Principal{}, ToWire(err)
	}
	return identity.UserPrincipal(name), nil
}

// lookup returns a user's stored credentials, or decoy ones for a user that
// does not exist (see authService.decoy), which no proof matches.
func (a *authService) lookup(user string) (scram.StoredCredentials, error) {
	if rec, ok := a.sec.Credentials(user); ok && len(rec.GetSalt()) > 0 {
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(rec.GetSalt()), Iters: int(rec.GetIterations())},
			StoredKey:  rec.GetStoredKey(),
			ServerKey:  rec.GetServerKey(),
		}, nil
	}
	mac := hmac.New(sha256.New, a.decoy)
	mac.Write([]byte(user))
	sum := mac.Sum(nil)
	return scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(sum[:16]), Iters: DefaultScramIterations},
		StoredKey:  sum[16:], // 16 bytes: no client proof hashes to it
		ServerKey:  sum[16:],
	}, nil
}

func (a *authService) failed(reason string) {
	if a.sec.OnAuthFailure != nil {
		a.sec.OnAuthFailure(reason)
	}
}

// DefaultScramIterations is the PBKDF2 iteration count of new credentials
// (RFC 7677's minimum is 4096).
const DefaultScramIterations = 8192

// ScramCredentials derives a user's stored credentials from a password with
// a fresh random salt: what floe user create sends, so the password never
// leaves the client.
func ScramCredentials(name, password string) (*pb.UserRecord, error) {
	if err := identity.ValidUserName(name); err != nil {
		return nil, err
	}
	client, err := scram.SHA256.NewClient(name, password, "")
	if err != nil {
		return nil, Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "password: %v", err)
	}
	salt := make([]byte, 24)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	creds := client.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: DefaultScramIterations})
	return &pb.UserRecord{Name: name, Salt: salt, Iterations: DefaultScramIterations,
		StoredKey: creds.StoredKey, ServerKey: creds.ServerKey}, nil
}

// ScramAuthenticator returns a PoolConfig.Authenticate that proves the
// connection is user's, with password. The salted password is derived once
// and kept, so new connections cost two round trips, not a key derivation.
func ScramAuthenticator(user, password string) (func(ctx context.Context, conn drpc.Conn) error, error) {
	if err := identity.ValidUserName(user); err != nil {
		return nil, err
	}
	client, err := scram.SHA256.NewClient(user, password, "")
	if err != nil {
		return nil, pkgerr.Errorf("transport", "password: %w", err)
	}
	return func(ctx context.Context, conn drpc.Conn) error {
		return scramExchange(ctx, client.NewConversation(), conn)
	}, nil
}

// scramExchange runs the client side of Auth.Authenticate.
func scramExchange(ctx context.Context, conv *scram.ClientConversation, conn drpc.Conn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := pb.NewDRPCAuthClient(conn).Authenticate(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = stream.Close() }()
	clientFirst, err := conv.Step("")
	if err != nil {
		return pkgerr.Errorf("transport", "SCRAM: %w", err)
	}
	if err := stream.Send(&pb.SaslMessage{Mechanism: ScramMechanism, Payload: []byte(clientFirst)}); err != nil {
		return err
	}
	serverFirst, err := stream.Recv()
	if err != nil {
		return err
	}
	clientFinal, err := conv.Step(string(serverFirst.GetPayload()))
	if err != nil {
		return Errorf(pb.ErrorCode_ERROR_CODE_UNAUTHENTICATED, "SCRAM: the node's answer: %v", err)
	}
	if err := stream.Send(&pb.SaslMessage{Payload: []byte(clientFinal)}); err != nil {
		return err
	}
	serverFinal, err := stream.Recv()
	if err != nil {
		return err
	}
	// The node proves it holds the credentials too: a node that does not
	// (an impostor) fails here.
	if _, err := conv.Step(string(serverFinal.GetPayload())); err != nil || !serverFinal.GetDone() || !conv.Valid() {
		return Errorf(pb.ErrorCode_ERROR_CODE_UNAUTHENTICATED, "SCRAM: the node did not prove it knows the credentials")
	}
	return nil
}

// VerifyPassword reports whether password is the one rec's credentials
// were made from (for HTTP basic authentication, where there is no SCRAM
// exchange). It costs a key derivation.
func VerifyPassword(rec *pb.UserRecord, password string) bool {
	if rec == nil || len(rec.GetSalt()) == 0 {
		return false
	}
	client, err := scram.SHA256.NewClient(rec.GetName(), password, "")
	if err != nil {
		return false
	}
	creds := client.GetStoredCredentials(scram.KeyFactors{Salt: string(rec.GetSalt()), Iters: int(rec.GetIterations())})
	return hmac.Equal(creds.StoredKey, rec.GetStoredKey())
}

// FailureLimiter applies a FailureLimit, for authentication outside the
// RPC port (HTTP basic authentication).
type FailureLimiter struct{ l *failureLimiter }

// NewFailureLimiter returns a limiter of cfg.
func NewFailureLimiter(cfg FailureLimit) *FailureLimiter {
	return &FailureLimiter{l: newFailureLimiter(cfg)}
}

// Allowed reports whether addr may try to authenticate now.
func (f *FailureLimiter) Allowed(addr netip.Addr) bool { return f.l.allowed(addr) }

// Failure counts a failed attempt of addr.
func (f *FailureLimiter) Failure(addr netip.Addr) { f.l.failure(addr) }
