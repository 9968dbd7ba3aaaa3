package pgwire

import "strconv"

// Frontend message type bytes (protocol-message-formats.html).
const (
	TypeBind         = 'B'
	TypeClose        = 'C'
	TypeCopyData     = 'd'
	TypeCopyDone     = 'c'
	TypeCopyFail     = 'f'
	TypeDescribe     = 'D'
	TypeExecute      = 'E'
	TypeFlush        = 'H'
	TypeFunctionCall = 'F'
	TypeParse        = 'P'
	TypePassword     = 'p' // PasswordMessage, SASLInitialResponse, SASLResponse, GSSResponse
	TypeQuery        = 'Q'
	TypeSync         = 'S'
	TypeTerminate    = 'X'
)

// Backend message type bytes.
const (
	TypeAuthentication           = 'R'
	TypeBackendKeyData           = 'K'
	TypeBindComplete             = '2'
	TypeCloseComplete            = '3'
	TypeCommandComplete          = 'C'
	TypeCopyInResponse           = 'G'
	TypeCopyOutResponse          = 'H'
	TypeCopyBothResponse         = 'W'
	TypeDataRow                  = 'D'
	TypeEmptyQueryResponse       = 'I'
	TypeErrorResponse            = 'E'
	TypeFunctionCallResponse     = 'V'
	TypeNegotiateProtocolVersion = 'v'
	TypeNoData                   = 'n'
	TypeNoticeResponse           = 'N'
	TypeNotificationResponse     = 'A'
	TypeParameterDescription     = 't'
	TypeParameterStatus          = 'S'
	TypeParseComplete            = '1'
	TypePortalSuspended          = 's'
	TypeReadyForQuery            = 'Z'
	TypeRowDescription           = 'T'
	// TypeCompressedMessages is the proposed protocol-compression container.
	TypeCompressedMessages = 'z'
)

// Authentication request codes (the Int32 after 'R').
const (
	AuthOk                = 0
	AuthKerberosV5        = 2
	AuthCleartextPassword = 3
	AuthMD5Password       = 5
	AuthSCMCredential     = 6
	AuthGSS               = 7
	AuthGSSContinue       = 8
	AuthSSPI              = 9
	AuthSASL              = 10
	AuthSASLContinue      = 11
	AuthSASLFinal         = 12
)

var (
	frontendNames [256]string
	backendNames  [256]string
	// fixedLen holds the only valid length field of body-less (or fixed)
	// messages, per direction; 0 means variable.
	fixedLenF [256]int32
	fixedLenB [256]int32
	// neverCompressed marks the backend messages the compression proposal
	// always sends uncompressed so that proxies can read them.
	neverCompressed [256]bool
)

func init() {
	for t, n := range map[byte]string{
		'B': "Bind", 'C': "Close", 'd': "CopyData", 'c': "CopyDone", 'f': "CopyFail",
		'D': "Describe", 'E': "Execute", 'H': "Flush", 'F': "FunctionCall",
		'P': "Parse", 'p': "PasswordMessage", 'Q': "Query", 'S': "Sync", 'X': "Terminate",
	} {
		frontendNames[t] = n
	}
	for t, n := range map[byte]string{
		'R': "Authentication", 'K': "BackendKeyData", '2': "BindComplete", '3': "CloseComplete",
		'C': "CommandComplete", 'd': "CopyData", 'c': "CopyDone", 'G': "CopyInResponse",
		'H': "CopyOutResponse", 'W': "CopyBothResponse", 'D': "DataRow", 'I': "EmptyQueryResponse",
		'E': "ErrorResponse", 'V': "FunctionCallResponse", 'v': "NegotiateProtocolVersion",
		'n': "NoData", 'N': "NoticeResponse", 'A': "NotificationResponse",
		't': "ParameterDescription", 'S': "ParameterStatus", '1': "ParseComplete",
		's': "PortalSuspended", 'Z': "ReadyForQuery", 'T': "RowDescription",
		'z': "CompressedMessages",
	} {
		backendNames[t] = n
	}
	for _, t := range []byte{'c', 'H', 'S', 'X'} {
		fixedLenF[t] = 4
	}
	for _, t := range []byte{'2', '3', 'c', 'I', 'n', '1', 's'} {
		fixedLenB[t] = 4
	}
	fixedLenB['Z'] = 5
	for _, t := range []byte{'Z', 'E', 'S', 'C', 'K'} {
		neverCompressed[t] = true
	}
}

// MessageName returns the name libpq's trace gives to a typed message of the
// given direction (frontend when fromFrontend), or "Unknown(0x..)" when the
// type byte is not defined for that direction. Frontend 'p' is reported as
// "PasswordMessage"; the decoder refines it from the authentication state.
func MessageName(typ byte, fromFrontend bool) string {
	n := backendNames[typ]
	if fromFrontend {
		n = frontendNames[typ]
	}
	if n == "" {
		return "Unknown(0x" + strconv.FormatUint(uint64(typ), 16) + ")"
	}
	return n
}

// ValidType reports whether typ is a message type the given direction sends.
func ValidType(typ byte, fromFrontend bool) bool {
	if fromFrontend {
		return frontendNames[typ] != ""
	}
	return backendNames[typ] != ""
}

// NeverCompressed reports whether the compression proposal always sends
// backend messages of this type uncompressed (ReadyForQuery, ErrorResponse,
// ParameterStatus, CommandComplete, BackendKeyData).
func NeverCompressed(typ byte) bool { return neverCompressed[typ] }

// AuthName returns the message name of an Authentication request code.
func AuthName(code int32) string {
	switch code {
	case AuthOk:
		return "AuthenticationOk"
	case AuthKerberosV5:
		return "AuthenticationKerberosV5"
	case AuthCleartextPassword:
		return "AuthenticationCleartextPassword"
	case AuthMD5Password:
		return "AuthenticationMD5Password"
	case AuthSCMCredential:
		return "AuthenticationSCMCredential"
	case AuthGSS:
		return "AuthenticationGSS"
	case AuthGSSContinue:
		return "AuthenticationGSSContinue"
	case AuthSSPI:
		return "AuthenticationSSPI"
	case AuthSASL:
		return "AuthenticationSASL"
	case AuthSASLContinue:
		return "AuthenticationSASLContinue"
	case AuthSASLFinal:
		return "AuthenticationSASLFinal"
	}
	return "Authentication"
}

// plausibleLength reports whether length (the Int32 after the type byte)
// can belong to a message of type typ in the given direction: used to pick
// a message boundary after a gap.
func plausibleLength(typ byte, length int64, fromFrontend bool, max int64) bool {
	if length < 4 || length > max {
		return false
	}
	fixed := fixedLenB[typ]
	if fromFrontend {
		fixed = fixedLenF[typ]
	}
	if fixed != 0 {
		return length == int64(fixed)
	}
	switch {
	case !fromFrontend && typ == 'K':
		return length >= 12 && length <= 12+256
	case !fromFrontend && typ == 'R':
		return length >= 8
	case !fromFrontend && (typ == 'T' || typ == 'D' || typ == 't'):
		return length >= 6
	case fromFrontend && typ == 'E':
		return length >= 9
	case fromFrontend && (typ == 'D' || typ == 'C'):
		return length >= 6
	}
	return true
}
