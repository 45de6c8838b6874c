package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store/sqlite"
)

// The transcoding workflow's types: a source to download, a rendition to
// encode, a file made.
type (
	source    struct{ URL string }
	rendition struct{ Height int }
	file      struct{ Path string }
)

// ExampleEngine_SubmitWorkflow runs the transcoding workflow end to end:
// download the source, encode each rendition and make the thumbnails
// from it (in parallel), and publish once they are all done, each task
// receiving its dependencies' results as its inputs.
func ExampleEngine_SubmitWorkflow() {
	dir, _ := os.MkdirTemp("", "jobd-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "jobd.db"), sqlite.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		fmt.Println(err)
		return
	}
	e, err := engine.New(engine.Config{
		Store:  st,
		Queues: []engine.QueueConfig{{Queue: "default", Concurrency: 4}},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	engine.Register(e, "download", func(ctx context.Context, j *engine.Job[source]) (file, error) {
		return file{Path: filepath.Base(j.Args.URL)}, nil
	})
	engine.Register(e, "encode", func(ctx context.Context, j *engine.Job[rendition]) (file, error) {
		in, err := engine.Input[file](j, "download")
		if err != nil {
			return file{}, err
		}
		return file{Path: fmt.Sprintf("%s.%dp.mp4", in.Path, j.Args.Height)}, nil
	})
	engine.Register(e, "thumbnails", func(ctx context.Context, j *engine.Job[struct{}]) (file, error) {
		in, err := engine.Input[file](j, "download")
		return file{Path: in.Path + ".jpg"}, err
	})
	published := make(chan string, 1)
	engine.Register(e, "publish", func(ctx context.Context, j *engine.Job[struct{}]) (engine.NoResult, error) {
		var made []string
		for ref := range j.Inputs {
			f, err := engine.Input[file](j, ref)
			if err != nil {
				return engine.NoResult{}, err
			}
			made = append(made, ref+"="+f.Path)
		}
		slices.Sort(made)
		published <- strings.Join(made, " ")
		return engine.NoResult{}, nil
	})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()

	wf := engine.NewWorkflow("transcode")
	download := wf.Task("download", job.InsertParams{Kind: "download", Args: engine.Args(source{URL: "https://example.com/in.mov"})})
	steps := []engine.Task{wf.Task("thumbnails", job.InsertParams{Kind: "thumbnails"}, engine.DependsOn(download))}
	for _, height := range []int{720, 1080} {
		steps = append(steps, wf.Task(fmt.Sprintf("encode-%dp", height),
			job.InsertParams{Kind: "encode", Args: engine.Args(rendition{Height: height})}, engine.DependsOn(download)))
	}
	wf.Task("publish", job.InsertParams{Kind: "publish"}, engine.DependsOn(steps...))
	res, err := e.SubmitWorkflow(ctx, wf)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("published", <-published)
	// A graceful stop writes the outcomes of the jobs that ran.
	stop()
	if err := <-done; err != nil {
		fmt.Println(err)
		return
	}
	w, err := st.WorkflowGet(ctx, res.Workflow.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %s, %d of %d tasks succeeded\n", w.Name, w.State, w.Succeeded, w.TaskCount)
	// Output:
	// published encode-1080p=in.mov.1080p.mp4 encode-720p=in.mov.720p.mp4 thumbnails=in.mov.jpg
	// transcode: succeeded, 5 of 5 tasks succeeded
}
