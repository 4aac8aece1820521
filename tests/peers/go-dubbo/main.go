// The dubbo-go 3.3 test provider: the Java peer's com.example.peer.DemoService and EchoService
// (non-IDL, Hessian2) on dubbo and tri, registered in ZooKeeper or Nacos (or nowhere), built with
// dubbo-go's new API (dubbo.NewInstance -> NewServer -> RegisterService). It prints
// "READY <json>" once exported and registered, and stops (unregistering) on SIGTERM.
//
// Usage: go-dubbo-peer [--registry URL|none] [--app NAME] [--protocols dubbo,tri] [--dubbo-port N]
// [--tri-port N] [--metadata-port N] [--group G] [--version V] [--registry-type interface|service|all]
// [--metadata-type local|remote] [--services demo,echo] [--param k=v]...
//
// "go-dubbo-peer consumer ..." calls a provider instead (consumer.go).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"dubbo.apache.org/dubbo-go/v3"
	"dubbo.apache.org/dubbo-go/v3/graceful_shutdown"
	_ "dubbo.apache.org/dubbo-go/v3/imports"
	"dubbo.apache.org/dubbo-go/v3/logger"
	"dubbo.apache.org/dubbo-go/v3/metrics/probe"
	"dubbo.apache.org/dubbo-go/v3/protocol"
	"dubbo.apache.org/dubbo-go/v3/registry"
	"dubbo.apache.org/dubbo-go/v3/server"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	if len(os.Args) > 1 && os.Args[1] == "consumer" {
		os.Exit(consumerMain(os.Args[2:]))
	}
	var (
		reg          = flag.String("registry", "none", "zookeeper://H:P?group=ROOT | nacos://H:P?namespace=NS&group=G | none")
		app          = flag.String("app", "go-dubbo-peer", "application name")
		protocols    = flag.String("protocols", "dubbo,tri", "protocols to export on")
		dubboPort    = flag.Int("dubbo-port", 0, "dubbo port (0 = free)")
		triPort      = flag.Int("tri-port", 0, "tri port (0 = free)")
		metadataPort = flag.Int("metadata-port", 0, "MetadataService port (0 = free; always set)")
		group        = flag.String("group", "", "service group")
		version      = flag.String("version", "", "service version")
		registryType = flag.String("registry-type", "all", "interface | service | all")
		metadataType = flag.String("metadata-type", "local", "local | remote")
		services     = flag.String("services", "demo,echo", "services to export: demo, echo")
		params       multi
	)
	flag.Var(&params, "param", "extra service parameter k=v (repeatable)")
	flag.Parse()
	if err := run(*reg, *app, *protocols, *dubboPort, *triPort, *metadataPort, *group, *version,
		*registryType, *metadataType, *services, params); err != nil {
		fmt.Fprintln(os.Stderr, "go-dubbo-peer:", err)
		fmt.Println("FAILED", err)
		os.Exit(1)
	}
}

func freePort(p int) (int, error) {
	if p != 0 {
		return p, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func registryOptions(raw, registryType string) ([]registry.Option, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("bad --registry %q: %w", raw, err)
	}
	q := u.Query()
	opts := []registry.Option{registry.WithAddress(u.Host), registry.WithTimeout(10 * time.Second)}
	switch u.Scheme {
	case "zookeeper":
		opts = append(opts, registry.WithZookeeper())
	case "nacos":
		opts = append(opts, registry.WithNacos())
		if ns := q.Get("namespace"); ns != "" {
			opts = append(opts, registry.WithNamespace(ns))
		}
	default:
		return nil, fmt.Errorf("unsupported registry %q (zookeeper, nacos)", u.Scheme)
	}
	if g := q.Get("group"); g != "" {
		opts = append(opts, registry.WithGroup(g))
	}
	switch registryType {
	case "interface":
		opts = append(opts, registry.WithRegisterInterface())
	case "service":
		opts = append(opts, registry.WithRegisterService())
	case "all":
		opts = append(opts, registry.WithRegisterServiceAndInterface())
	default:
		return nil, fmt.Errorf("unknown --registry-type %q (interface, service, all)", registryType)
	}
	return opts, nil
}

func run(reg, app, protocols string, dubboPort, triPort, metadataPort int, group, version,
	registryType, metadataType, services string, params []string) error {
	ports := map[string]int{}
	var insOpts []dubbo.InstanceOption
	insOpts = append(insOpts, dubbo.WithName(app))
	var protocolIDs []string
	for _, name := range strings.Split(protocols, ",") {
		var p int
		var err error
		switch name {
		case "dubbo":
			if p, err = freePort(dubboPort); err != nil {
				return err
			}
			insOpts = append(insOpts, dubbo.WithProtocol(protocol.WithDubbo(), protocol.WithIp("127.0.0.1"),
				protocol.WithPort(p), protocol.WithID("dubbo")))
		case "tri":
			if p, err = freePort(triPort); err != nil {
				return err
			}
			insOpts = append(insOpts, dubbo.WithProtocol(protocol.WithTriple(), protocol.WithIp("127.0.0.1"),
				protocol.WithPort(p), protocol.WithID("tri")))
		default:
			return fmt.Errorf("unknown protocol %q (dubbo, tri)", name)
		}
		ports[name] = p
		protocolIDs = append(protocolIDs, name)
	}
	mp, err := freePort(metadataPort)
	if err != nil {
		return err
	}
	ports["metadata"] = mp
	insOpts = append(insOpts, dubbo.WithMetadataServicePort(mp))
	if metadataType == "remote" {
		insOpts = append(insOpts, dubbo.WithRemoteMetadata())
	}
	if reg != "none" && reg != "" {
		ropts, err := registryOptions(reg, registryType)
		if err != nil {
			return err
		}
		insOpts = append(insOpts, dubbo.WithRegistry(ropts...))
	}
	// dubbo-go owns SIGTERM: keep its graceful shutdown short so a stopped peer unregisters at once.
	insOpts = append(insOpts, dubbo.WithShutdown(
		graceful_shutdown.WithTimeout(3*time.Second),
		graceful_shutdown.WithStepTimeout(1*time.Second),
		graceful_shutdown.WithConsumerUpdateWaitTime(0),
		graceful_shutdown.WithOfflineRequestWindowTimeout(0),
	))
	insOpts = append(insOpts, dubbo.WithLogger(logger.WithLevel("warn")))

	ins, err := dubbo.NewInstance(insOpts...)
	if err != nil {
		return fmt.Errorf("instance: %w", err)
	}
	srv, err := ins.NewServer()
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}

	svcOpts := []server.ServiceOption{
		server.WithSerialization("hessian2"),
		// server.WithProtocolIDs only assigns when the list is empty: set the IDs directly.
		func(o *server.ServiceOptions) { o.Service.ProtocolIDs = protocolIDs },
	}
	if group != "" {
		svcOpts = append(svcOpts, server.WithGroup(group))
	}
	if version != "" {
		svcOpts = append(svcOpts, server.WithVersion(version))
	}
	for _, kv := range params {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("--param wants k=v, got %q", kv)
		}
		svcOpts = append(svcOpts, server.WithParam(k, v))
	}
	id := &identity{app: app, ports: ports}
	exported := []map[string]any{}
	for _, s := range strings.Split(services, ",") {
		var handler any
		var iface string
		switch s {
		case "demo":
			handler, iface = &DemoService{id: id}, "com.example.peer.DemoService"
		case "echo":
			handler, iface = &EchoService{id: id}, "com.example.peer.EchoService"
		default:
			return fmt.Errorf("unknown service %q (demo, echo)", s)
		}
		opts := append([]server.ServiceOption{server.WithInterface(iface)}, svcOpts...)
		if err := srv.RegisterService(handler, opts...); err != nil {
			return fmt.Errorf("register %s: %w", iface, err)
		}
		exported = append(exported, map[string]any{"interface": iface, "group": group, "version": version})
	}

	// The framework's own readiness flag (set once exported and registered) tells when to say READY.
	probe.Init(&probe.Config{Enabled: true, Port: "0", UseInternalState: true})
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	deadline := time.Now().Add(120 * time.Second)
	for probe.CheckReadiness(context.Background()) != nil {
		select {
		case err := <-served:
			return fmt.Errorf("serve: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within 120 s")
		}
	}
	ready, _ := json.Marshal(map[string]any{
		"pid":         os.Getpid(),
		"host":        "127.0.0.1",
		"application": app,
		"ports":       ports,
		"services":    exported,
	})
	fmt.Println("READY " + string(ready))
	err = <-served
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-dubbo-peer: serve ended:", err)
	}
	return nil
}

// identity says who answered a call.
type identity struct {
	app   string
	ports map[string]int
}

// describe is "APP@PROTOCOL://127.0.0.1:PORT", as the Java peer's whoAmI. dubbo-go's dubbo
// protocol puts the connection's local-addr in the attachments and Triple does not: that tells
// the protocol apart.
func (i *identity) describe(ctx context.Context) string {
	if addr, ok := attachments(ctx)["local-addr"]; ok {
		return i.app + "@dubbo://" + addr
	}
	return fmt.Sprintf("%s@tri://127.0.0.1:%d", i.app, i.ports["tri"])
}
