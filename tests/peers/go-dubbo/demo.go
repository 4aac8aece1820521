package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common/constant"
	hessian "github.com/apache/dubbo-go-hessian2"
	"github.com/apache/dubbo-go-hessian2/java_exception"
	big "github.com/dubbogo/gost/math/big"
)

func init() {
	hessian.RegisterPOJO(&User{})
	hessian.RegisterPOJO(&DemoException{})
	for _, c := range []Color{Red, Green, Blue} {
		hessian.RegisterJavaEnum(c)
	}
}

// User mirrors com.example.peer.User (Hessian field names are the Java ones).
type User struct {
	Name    string            `hessian:"name"`
	Age     int32             `hessian:"age"`
	Score   float64           `hessian:"score"`
	Tags    []string          `hessian:"tags"`
	Attrs   map[string]string `hessian:"attrs"`
	Color   Color             `hessian:"color"`
	Balance *big.Decimal      `hessian:"balance"`
}

// JavaClassName is the Java class this struct stands for.
func (User) JavaClassName() string { return "com.example.peer.User" }

// Color mirrors the enum com.example.peer.Color.
type Color hessian.JavaEnum

// The constants of Color, in Java's order.
const (
	Red Color = iota
	Green
	Blue
)

var colorNames = []string{"RED", "GREEN", "BLUE"}

// JavaClassName is the Java enum this type stands for.
func (Color) JavaClassName() string { return "com.example.peer.Color" }

func (c Color) String() string {
	if int(c) >= 0 && int(c) < len(colorNames) {
		return colorNames[c]
	}
	return fmt.Sprintf("Color(%d)", int(c))
}

// EnumValue maps a constant's name to its value.
func (Color) EnumValue(s string) hessian.JavaEnum {
	for i, n := range colorNames {
		if n == s {
			return hessian.JavaEnum(i)
		}
	}
	return hessian.InvalidJavaEnum
}

// DemoException mirrors com.example.peer.DemoException (a checked business exception with a code).
type DemoException struct {
	SerialVersionUID     int64
	DetailMessage        string
	StackTrace           []java_exception.StackTraceElement
	SuppressedExceptions []java_exception.Throwabler
	Cause                java_exception.Throwabler
	Code                 string `hessian:"code"`
}

func (e DemoException) Error() string { return e.DetailMessage }

// JavaClassName is the Java class this error stands for.
func (DemoException) JavaClassName() string { return "com.example.peer.DemoException" }

// GetStackTrace is Throwable.getStackTrace.
func (e DemoException) GetStackTrace() []java_exception.StackTraceElement { return e.StackTrace }

// DemoService implements com.example.peer.DemoService as far as dubbo-go's Hessian2 allows
// (no overloads: describe(String)/describe(long) are one method here).
type DemoService struct {
	id       *identity
	mu       sync.Mutex
	recorded string
}

func (s *DemoService) SayHello(ctx context.Context, name string) (string, error) {
	return "Hello " + name, nil
}

func (s *DemoService) EchoString(ctx context.Context, v string) (string, error) { return v, nil }

func (s *DemoService) AddInt(ctx context.Context, a, b int32) (int32, error) { return a + b, nil }

func (s *DemoService) AddLong(ctx context.Context, a, b int64) (int64, error) { return a + b, nil }

func (s *DemoService) AddDouble(ctx context.Context, a, b float64) (float64, error) {
	return a + b, nil
}

func (s *DemoService) AddFloat(ctx context.Context, a, b float32) (float32, error) {
	return a + b, nil
}

func (s *DemoService) AddDecimal(ctx context.Context, a, b *big.Decimal) (*big.Decimal, error) {
	var sum big.Decimal
	if err := big.DecimalAdd(a, b, &sum); err != nil {
		return nil, err
	}
	return &sum, nil
}

func (s *DemoService) Invert(ctx context.Context, b bool) (bool, error) { return !b, nil }

func (s *DemoService) EchoBytes(ctx context.Context, b []byte) ([]byte, error) { return b, nil }

func (s *DemoService) EchoDate(ctx context.Context, d time.Time) (time.Time, error) { return d, nil }

func (s *DemoService) GetUser(ctx context.Context, name string) (*User, error) {
	balance := new(big.Decimal)
	if err := balance.FromString("12345678901234567890.123456789"); err != nil {
		return nil, err
	}
	return &User{
		Name:    name,
		Age:     42,
		Score:   97.5,
		Tags:    []string{"a", "b"},
		Attrs:   map[string]string{"k": "v"},
		Color:   Green,
		Balance: balance,
	}, nil
}

func (s *DemoService) EchoUser(ctx context.Context, u *User) (*User, error) { return u, nil }

func (s *DemoService) ListUsers(ctx context.Context, n int32) ([]*User, error) {
	out := make([]*User, 0, n)
	for i := int32(0); i < n; i++ {
		out = append(out, &User{Name: fmt.Sprintf("user%d", i), Age: i})
	}
	return out, nil
}

// EchoList takes any: dubbo-go cannot bind a Hessian list to []string (neither protocol), and a
// lone []any parameter receives all the arguments (its old calling convention).
func (s *DemoService) EchoList(ctx context.Context, items any) (any, error) {
	return items, nil
}

// EchoMap takes map[any]any: dubbo-go cannot bind a Hessian map to map[string]int32.
func (s *DemoService) EchoMap(ctx context.Context, m map[any]any) (map[any]any, error) {
	return m, nil
}

// EchoColor takes *Color: over dubbo the decoder hands an enum argument over as a pointer.
func (s *DemoService) EchoColor(ctx context.Context, c *Color) (*Color, error) { return c, nil }

func (s *DemoService) NextColor(ctx context.Context, c *Color) (*Color, error) {
	if c == nil {
		return nil, nil
	}
	n := Color((int(*c) + 1) % len(colorNames))
	return &n, nil
}

func (s *DemoService) EchoObject(ctx context.Context, o any) (any, error) { return o, nil }

func (s *DemoService) Record(ctx context.Context, what string) error {
	s.mu.Lock()
	s.recorded = what
	s.mu.Unlock()
	return nil
}

func (s *DemoService) LastRecorded(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recorded, nil
}

func (s *DemoService) Fail(ctx context.Context, message string) (string, error) {
	return "", &DemoException{DetailMessage: message, Code: "E42",
		StackTrace: []java_exception.StackTraceElement{}}
}

func (s *DemoService) FailRuntime(ctx context.Context, message string) (string, error) {
	return "", java_exception.NewIllegalStateException(message)
}

func (s *DemoService) SayHelloAsync(ctx context.Context, name string) (string, error) {
	return "Hello " + name + " (async)", nil
}

func (s *DemoService) EchoAttachments(ctx context.Context) (map[string]string, error) {
	return attachments(ctx), nil
}

func (s *DemoService) Sleep(ctx context.Context, millis int32) (string, error) {
	time.Sleep(time.Duration(millis) * time.Millisecond)
	return fmt.Sprintf("slept %d", millis), nil
}

func (s *DemoService) WhoAmI(ctx context.Context) (string, error) { return s.id.describe(ctx), nil }

// EchoService implements com.example.peer.EchoService.
type EchoService struct{ id *identity }

func (s *EchoService) Echo(ctx context.Context, v string) (string, error) { return v, nil }

func (s *EchoService) WhoAmI(ctx context.Context) (string, error) { return s.id.describe(ctx), nil }

// attachments are the call's attachments as strings (dubbo-go puts them in the context).
func attachments(ctx context.Context) map[string]string {
	out := map[string]string{}
	raw, _ := ctx.Value(constant.AttachmentKey).(map[string]any)
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := raw[k].(type) {
		case string:
			out[k] = v
		case []string:
			if len(v) > 0 {
				out[k] = v[0]
			}
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}
