package rabbitdiff

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"net"
	"os/exec"
	"strings"
	"sync"
)

// The pika and py-amqp workloads are scripts under testdata/, run by
// Debian's interpreter (the python3 on PATH may be another, without the
// python3-pika and python3-amqp packages).

// Python is the interpreter the scripts run under.
const Python = "/usr/bin/python3"

//go:embed testdata/*.py
var scripts embed.FS

// ErrUnavailable is returned (wrapped) by a workload whose client is not
// installed: the tests skip it, or fail under CI=true.
var ErrUnavailable = errors.New("rabbitdiff: client not installed")

var modules sync.Map // module name -> error (nil when importable)

// havePython says whether Python can import module.
func havePython(module string) error {
	if v, ok := modules.Load(module); ok {
		err, _ := v.(error)
		return err
	}
	var err error
	if out, cerr := exec.Command(Python, "-c", "import "+module).CombinedOutput(); cerr != nil {
		err = errors.Join(ErrUnavailable, errors.New(Python+" cannot import "+module+": "+strings.TrimSpace(string(out))))
	}
	modules.Store(module, err)
	return err
}

// pythonWorkload runs testdata/NAME.py with the relay's host, port and
// the run's prefix as arguments. The script talks back on stdout, one
// line each: "note TEXT" (an observation for the transcript), "queue NAME"
// and "exchange NAME" (declared, for the harness to delete).
func pythonWorkload(name, module string) Workload {
	return Workload{Name: name, Run: func(ctx context.Context, e *Env) error {
		if err := havePython(module); err != nil {
			return err
		}
		script, err := scripts.ReadFile("testdata/" + name + ".py")
		if err != nil {
			return errors.New("rabbitdiff: " + err.Error())
		}
		host, port, err := net.SplitHostPort(e.Addr)
		if err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, Python, "-", host, port, e.Prefix)
		cmd.Stdin = bytes.NewReader(script)
		cmd.Env = []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			kind, arg, _ := strings.Cut(sc.Text(), " ")
			switch kind {
			case "note":
				e.Note(arg)
			case "queue":
				e.Queue(strings.TrimPrefix(arg, e.Prefix))
			case "exchange":
				e.Exchange(strings.TrimPrefix(arg, e.Prefix))
			}
		}
		if err != nil {
			return errors.New(name + ".py: " + err.Error() + ": " + lastLines(stderr.String(), 5))
		}
		return nil
	}}
}

// lastLines keeps the end of a traceback.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func pythonWorkloads() []Workload {
	return []Workload{
		pythonWorkload("pika-basic", "pika"),
		pythonWorkload("pika-confirms", "pika"),
		pythonWorkload("pika-errors", "pika"),
		pythonWorkload("pika-bad-password", "pika"),
		pythonWorkload("pika-dead-letter", "pika"),
		pythonWorkload("pika-tx", "pika"),
		pythonWorkload("pika-topic-qos", "pika"),
		pythonWorkload("pyamqp-amqplain", "amqp"),
		pythonWorkload("pyamqp-errors", "amqp"),
		pythonWorkload("pyamqp-consume", "amqp"),
		pythonWorkload("pyamqp-headers", "amqp"),
		pythonWorkload("kombu-basic", "kombu"),
	}
}
