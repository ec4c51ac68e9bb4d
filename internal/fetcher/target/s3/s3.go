// Package s3 is the S3 target (s3://bucket/prefix), any S3-compatible
// store: a product streamed into a multipart upload completed only once
// verified, its checksums kept as the object's metadata.
package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
)

// Options configure the S3 target; the zero value is the SDK's default
// configuration (the environment, ~/.aws, instance roles).
type Options struct {
	// Endpoint is an S3-compatible store's URL ("" AWS's).
	Endpoint string
	Region   string
	// AccessKeyID and SecretAccessKey (and SessionToken) are static
	// keys; without them the SDK's default credential chain applies.
	AccessKeyID, SecretAccessKey, SessionToken string
	// PathStyle addresses bucket/key on the endpoint's host rather than
	// bucket.host; nil: on for an IP or localhost endpoint.
	PathStyle *bool
	// PartSize is the multipart upload's part (default 5 MiB, S3's
	// least; larger for a product that would need more than 9 000 parts) and Concurrency the parts sent at once (default 2):
	// memory is about (Concurrency+1) × PartSize per download.
	PartSize    int64
	Concurrency int
	// IMDS lets the credential chain ask the instance metadata service
	// (AWS_EC2_METADATA_DISABLED=false). Off by default, unlike the
	// SDK's: off EC2 the question only costs time before the error,
	// and on EC2 the instance's role is a login the user did not name.
	IMDS bool
}

// noCredentials is what to set when the credential chain finds none.
const noCredentials = "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or their _FILE), AWS_PROFILE, or AWS_WEB_IDENTITY_TOKEN_FILE; AWS_EC2_METADATA_DISABLED=false uses the instance's role"

// OptionsFromEnv reads the S3 target's settings the AWS way:
// AWS_ENDPOINT_URL_S3 before AWS_ENDPOINT_URL, AWS_REGION,
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN (each key
// also from a file named by its _FILE, less the trailing newline). The
// fetcher's own S3 settings (FETCH_S3_*) are in its settings
// (internal/fetcher/fetchconfig).
func OptionsFromEnv(getenv func(string) string) (Options, error) {
	var o Options
	o.Endpoint = getenv("AWS_ENDPOINT_URL_S3")
	if o.Endpoint == "" {
		o.Endpoint = getenv("AWS_ENDPOINT_URL")
	}
	o.Region = getenv("AWS_REGION")
	o.IMDS = strings.EqualFold(getenv("AWS_EC2_METADATA_DISABLED"), "false")
	for _, s := range []struct {
		name string
		dst  *string
	}{{"AWS_ACCESS_KEY_ID", &o.AccessKeyID}, {"AWS_SECRET_ACCESS_KEY", &o.SecretAccessKey}, {"AWS_SESSION_TOKEN", &o.SessionToken}} {
		v, file := getenv(s.name), getenv(s.name+"_FILE")
		if v != "" && file != "" {
			return o, fmt.Errorf("%s and %s_FILE are both set", s.name, s.name)
		}
		if file != "" {
			b, err := os.ReadFile(file)
			if err != nil {
				return o, fmt.Errorf("%s_FILE: %w", s.name, err)
			}
			v = strings.TrimRight(string(b), "\r\n")
		}
		*s.dst = v
	}
	if (o.AccessKeyID == "") != (o.SecretAccessKey == "") {
		return o, errors.New("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together")
	}
	return o, nil
}

// Target stores products in a bucket, under a prefix.
type Target struct {
	client         *awss3.Client
	up             *transfermanager.Client
	bucket, prefix string
	part           int64 // the configured part size
	// noBatch: the store refused DeleteObjects (deleteObjects).
	noBatch atomic.Bool
	log     logrus.FieldLogger
}

// maxParts is how many parts an upload may have: S3's limit is 10 000;
// the margin covers a product longer than its ContentLength said.
const maxParts = 9000

// partSize is the part size of an upload of size bytes (0 unknown): the
// configured one, or larger for a product that would need more than
// maxParts of it (in whole MiB). Memory grows with it only for such
// products (50 GB and more at the default 5 MiB).
func (t *Target) partSize(size int64) int64 {
	if size <= 0 || size <= t.part*maxParts {
		return t.part
	}
	const mib = 1 << 20
	return (size/maxParts + mib) / mib * mib
}

// retrieve asks p (the SDK's credential chain) for credentials once,
// within a bound: a web identity or the metadata service answer over the
// network.
func retrieve(ctx context.Context, p aws.CredentialsProvider) error {
	if p == nil {
		return errors.New("no credential provider")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := p.Retrieve(ctx)
	return err
}

// NewTarget is the target s3://bucket/prefix.
func New(ctx context.Context, bucket, prefix string, o Options) (*Target, error) {
	if bucket == "" {
		return nil, errors.New("fetch target: no bucket")
	}
	var load []func(*config.LoadOptions) error
	if o.Region != "" {
		load = append(load, config.WithRegion(o.Region))
	}
	if o.AccessKeyID != "" {
		load = append(load, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(o.AccessKeyID, o.SecretAccessKey, o.SessionToken)))
	}
	if !o.IMDS {
		load = append(load, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	// The SDK's own HTTP client (awshttp.NewBuildableClient) is kept: it
	// is the one AWS_CA_BUNDLE can add roots to; it gets a bound on the
	// wait for an answer, which it has none of. Checksums the SDK
	// would compute of each part cost a read of it: the fetcher has its
	// own, in the metadata.
	load = append(load,
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.ResponseHeaderTimeout = responseTimeout
		})),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired))
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("fetch target s3://%s: %w", bucket, err)
	}
	if o.AccessKeyID == "" {
		// At start, not with every product: without credentials each
		// would fail with the SDK's account of its chain.
		if err := retrieve(ctx, cfg.Credentials); err != nil {
			return nil, fmt.Errorf("fetch target s3://%s: %s: %w", bucket, noCredentials, err)
		}
	}
	pathStyle := false
	if o.PathStyle != nil {
		pathStyle = *o.PathStyle
	} else if o.Endpoint != "" {
		if u, err := url.Parse(o.Endpoint); err == nil {
			h := u.Hostname()
			pathStyle = h == "localhost" || net.ParseIP(h) != nil
		}
	}
	client := awss3.NewFromConfig(cfg, func(so *awss3.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		so.UsePathStyle = pathStyle
		so.DisableLogOutputChecksumValidationSkipped = true
	})
	part := o.PartSize
	if part <= 0 {
		part = 5 << 20
	}
	part = max(part, 5<<20)
	conc := o.Concurrency
	if conc <= 0 {
		conc = 2
	}
	up := transfermanager.New(client, func(to *transfermanager.Options) {
		to.PartSizeBytes = part
		to.MultipartUploadThreshold = part
		to.Concurrency = conc
		// The abort of a failed upload runs even when the context is
		// what ended it (a cancelled Fetch).
		to.FailTimeout = 30 * time.Second
		to.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	})
	return &Target{client: client, up: up, bucket: bucket, prefix: strings.Trim(prefix, "/"), part: part}, nil
}

func (t *Target) key(key string) string {
	if t.prefix == "" {
		return key
	}
	return t.prefix + "/" + key
}

// URL implements Target.
func (t *Target) URL(key string) string { return "s3://" + t.bucket + "/" + t.key(key) }

// Stat implements Target: the size and the x-amz-meta-md5, -blake3 and
// -product-id the fetcher set.
func (t *Target) Stat(ctx context.Context, key string) (target.Stored, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := t.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &t.bucket, Key: aws.String(t.key(key))})
	var nf *types.NotFound
	if errors.As(err, &nf) {
		return target.Stored{}, false, nil
	}
	if err != nil {
		return target.Stored{}, false, fmt.Errorf("fetch target %s: %w", t.URL(key), err)
	}
	meta := map[string]string{}
	for k, v := range out.Metadata {
		meta[strings.ToLower(k)] = v
	}
	return target.Stored{Size: aws.ToInt64(out.ContentLength), MD5: meta["md5"], BLAKE3: meta["blake3"], ProductID: meta["product-id"]}, true, nil
}

// Read implements target.Target: a GET of the object, its body read as
// the caller goes (ctx bounds it).
func (t *Target) Read(ctx context.Context, key string) (io.ReadCloser, error) {
	out, err := t.client.GetObject(ctx, &awss3.GetObjectInput{Bucket: &t.bucket, Key: aws.String(t.key(key))})
	var nk *types.NoSuchKey
	if errors.As(err, &nk) {
		return nil, fmt.Errorf("%w: %s", target.ErrNotStored, t.URL(key))
	}
	if err != nil {
		return nil, fmt.Errorf("fetch target %s: %w", t.URL(key), err)
	}
	return out.Body, nil
}

// Probe implements Target: a small object under the prefix's hidden
// .fetcher-probe/ (never a product key: checkName refuses elements
// starting with a dot), put and deleted.
func (t *Target) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	host, _ := os.Hostname()
	key := aws.String(t.key(".fetcher-probe/" + host + "-" + strconv.Itoa(os.Getpid())))
	if _, err := t.client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &t.bucket, Key: key, Body: strings.NewReader("probe")}); err != nil {
		return fmt.Errorf("fetch target s3://%s/%s cannot be written: %w", t.bucket, t.prefix, err)
	}
	if _, err := t.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &t.bucket, Key: key}); err != nil {
		return fmt.Errorf("fetch target s3://%s/%s: removing the probe: %w", t.bucket, t.prefix, err)
	}
	return nil
}

// maxCopy is the largest object one CopyObject rewrites (S3's limit);
// a larger one would need a multipart copy, which Describe does not do.
const maxCopy = 5 << 30

// Describe implements target.Target: the object copied onto itself with
// its metadata replaced, in the store (no byte leaves it). An object over
// 5 GiB is refused (ErrTargetRefused is not used: the caller downloads it
// again instead).
func (t *Target) Describe(ctx context.Context, key string, s target.Stored) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	have, ok, err := t.Stat(ctx, key)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s", target.ErrNotStored, t.URL(key))
	}
	if have.Size > maxCopy {
		return fmt.Errorf("fetch target %s: %d bytes, more than one copy rewrites (5 GiB): its checksums cannot be recorded in place", t.URL(key), have.Size)
	}
	meta := map[string]string{"product-id": s.ProductID}
	if s.MD5 != "" {
		meta["md5"] = s.MD5
	}
	if s.BLAKE3 != "" {
		meta["blake3"] = s.BLAKE3
	}
	k := t.key(key)
	_, err = t.client.CopyObject(ctx, &awss3.CopyObjectInput{
		Bucket: &t.bucket, Key: aws.String(k), CopySource: aws.String(url.PathEscape(t.bucket) + "/" + pathEscapeKey(k)),
		Metadata: meta, MetadataDirective: types.MetadataDirectiveReplace,
	})
	if err != nil {
		return fmt.Errorf("fetch target %s: recording its checksums: %w", t.URL(key), err)
	}
	return nil
}

// pathEscapeKey escapes each element of an object key for a copy source.
func pathEscapeKey(k string) string {
	parts := strings.Split(k, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// Delete implements Target.
func (t *Target) Delete(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := t.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &t.bucket, Key: aws.String(t.key(key))}); err != nil {
		return fmt.Errorf("fetch target %s: %w", t.URL(key), err)
	}
	return nil
}

// DeleteFolder implements Target: the objects under the folder's
// prefix but last, a page of the listing (at most 1000 keys) at a time,
// each page in one DeleteObjects; then last. A removal cut midway leaves
// the rest for the next (the event is redelivered), last among it.
func (t *Target) DeleteFolder(ctx context.Context, folder, last string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	lastKey := ""
	if last != "" {
		lastKey = t.key(folder) + "/" + last
	}
	in := &awss3.ListObjectsV2Input{Bucket: &t.bucket, Prefix: aws.String(t.key(folder) + "/")}
	for {
		out, err := t.client.ListObjectsV2(ctx, in)
		if err != nil {
			return fmt.Errorf("fetch target %s/: listing: %w", t.URL(folder), err)
		}
		ids := make([]types.ObjectIdentifier, 0, len(out.Contents))
		for _, o := range out.Contents {
			if aws.ToString(o.Key) != lastKey {
				ids = append(ids, types.ObjectIdentifier{Key: o.Key})
			}
		}
		if err := t.deleteObjects(ctx, folder, ids); err != nil {
			return err
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.ContinuationToken = out.NextContinuationToken
	}
	if last == "" {
		return nil
	}
	return t.Delete(ctx, folder+"/"+last)
}

// deleteObjects removes ids in one DeleteObjects, or one DeleteObject
// each where the store refuses DeleteObjects (refusesBatch).
func (t *Target) deleteObjects(ctx context.Context, folder string, ids []types.ObjectIdentifier) error {
	if len(ids) == 0 {
		return nil
	}
	if !t.noBatch.Load() {
		del, err := t.client.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: &t.bucket, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		switch {
		case err != nil && refusesBatch(err):
			// Said once: from now on every folder is removed key by key.
			if t.noBatch.CompareAndSwap(false, true) && t.log != nil {
				t.log.WithError(err).Warn("the S3 store refuses DeleteObjects (it wants Content-MD5, which this SDK no longer sends, or has no batch delete): folders are removed one DeleteObject per object from now on")
			}
		case err != nil:
			return fmt.Errorf("fetch target %s/: %w", t.URL(folder), err)
		case len(del.Errors) > 0:
			e := del.Errors[0]
			return fmt.Errorf("fetch target %s/: %d objects not deleted, the first %s: %s %s", t.URL(folder), len(del.Errors), aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
		default:
			return nil
		}
	}
	// One at a time: a page is at most 1000 keys, each request bounded
	// by DeleteFolder's context.
	for _, id := range ids {
		if _, err := t.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &t.bucket, Key: id.Key}); err != nil {
			return fmt.Errorf("fetch target %s/: %s: %w", t.URL(folder), aws.ToString(id.Key), err)
		}
	}
	return nil
}

// refusesBatch says whether err is a store's refusal of DeleteObjects as
// such, not of the objects: Content-MD5 wanted (the SDK sends a CRC32
// checksum instead since 2025, even with checksums when required), or
// no DeleteObjects at all.
func refusesBatch(err error) bool {
	var coded interface{ ErrorCode() string }
	if !errors.As(err, &coded) {
		return false
	}
	switch coded.ErrorCode() {
	case "MissingContentMD5", "InvalidRequest", "NotImplemented":
		return true
	}
	return false
}

// SetLog has the target say once what it does of a store's refusal of
// DeleteObjects (internal/fetcher's Build gives the fetcher's log).
func (t *Target) SetLog(log logrus.FieldLogger) { t.log = log }

// Open implements Target: a multipart upload fed through a pipe, so that
// the uploader reads the bytes as they arrive (a part at a time) and
// completes only when Commit ends the stream; Abort ends it with an
// error, and the uploader aborts the upload. S3 keeps no partial across
// processes: a cut resumes within the Fetch, from the bytes sent.
func (t *Target) Open(ctx context.Context, key string, size int64, want target.Stored, _ ...target.OpenOption) (target.Upload, error) {
	u := &s3Upload{t: t, ctx: ctx, key: key, meta: map[string]string{"product-id": want.ProductID}, part: t.partSize(size)}
	if want.MD5 != "" {
		u.meta["md5"] = want.MD5
	}
	if want.BLAKE3 != "" {
		u.meta["blake3"] = want.BLAKE3
	}
	u.start()
	return u, nil
}

type s3Upload struct {
	t   *Target
	ctx context.Context
	// cancel ends the upload under way (its requests too): a write the
	// store has not taken for stallTimeout, a commit not done within it,
	// an abort.
	cancel context.CancelCauseFunc
	key    string
	meta   map[string]string
	part   int64
	held   int64
	etag   string

	pw   *io.PipeWriter
	done chan struct{}
	err  error // the upload's end, once done is closed
}

var (
	errAborted = errors.New("upload aborted")
	errStalled = errors.New("the store took nothing")
)

// stallTimeout bounds a write the store does not take (the pipe full, the
// parts under way not answered) and a commit: a store that holds the
// connection and never answers would otherwise hold the download's slot
// for ever, its message kept by the heartbeat. Requests the store does
// not answer once sent are bounded by the client's responseTimeout.
var stallTimeout = 5 * time.Minute

// responseTimeout bounds the wait for a store's answer to a request sent
// (S3 sends the headers of a long CompleteMultipartUpload at once).
const responseTimeout = 5 * time.Minute

func (u *s3Upload) start() {
	pr, pw := io.Pipe()
	u.pw, u.done, u.err, u.held = pw, make(chan struct{}), nil, 0
	done := u.done
	ctx, cancel := context.WithCancelCause(u.ctx)
	u.cancel = cancel
	go func() {
		defer cancel(nil)
		_, err := u.t.up.UploadObject(ctx, &transfermanager.UploadObjectInput{
			Bucket: &u.t.bucket, Key: aws.String(u.t.key(u.key)), Body: pr, Metadata: u.meta,
			ContentType: aws.String("application/zip"),
		}, func(o *transfermanager.Options) { o.PartSizeBytes, o.MultipartUploadThreshold = u.part, u.part })
		if err == nil {
			err = io.ErrClosedPipe // a writer after the end
		}
		pr.CloseWithError(err)
		u.err = err
		if errors.Is(err, io.ErrClosedPipe) {
			u.err = nil
		}
		close(done)
	}()
}

func (u *s3Upload) Write(p []byte) (int, error) {
	stall := time.AfterFunc(stallTimeout, func() {
		u.cancel(errStalled)
		u.pw.CloseWithError(errStalled)
	})
	n, err := u.pw.Write(p)
	fired := !stall.Stop()
	u.held += int64(n)
	if err != nil {
		if fired {
			err = fmt.Errorf("%w for %v", errStalled, stallTimeout)
		}
		return n, fmt.Errorf("fetch target %s: %w", u.t.URL(u.key), err)
	}
	return n, nil
}

func (u *s3Upload) Held() int64                      { return u.held }
func (u *s3Upload) Existing() (io.ReadCloser, error) { return nil, nil }
func (u *s3Upload) ETag() string                     { return u.etag }
func (u *s3Upload) SetETag(etag string) error        { u.etag = etag; return nil }

func (u *s3Upload) Restart(context.Context) error {
	u.Abort(false)
	u.start()
	u.etag = ""
	return nil
}

// Commit ends the stream: the uploader sends the last part and completes
// the upload.
func (u *s3Upload) Commit(context.Context, target.Stored) error {
	u.pw.Close()
	select {
	case <-u.done:
	case <-time.After(stallTimeout):
		u.cancel(errStalled)
		<-u.done
	}
	if u.err != nil {
		return fmt.Errorf("fetch target %s: %w", u.t.URL(u.key), u.err)
	}
	return nil
}

// Abort ends the stream with an error: the uploader aborts the upload
// (its FailTimeout lets the abort run after a cancellation).
func (u *s3Upload) Abort(bool) error {
	u.pw.CloseWithError(errAborted)
	// The uploader ends on the pipe's error and aborts the upload it
	// made; cancelled at once, a CreateMultipartUpload under way would
	// leave an upload it never learnt the id of. Only a store that does
	// not answer for stallTimeout has its requests cut.
	select {
	case <-u.done:
	case <-time.After(stallTimeout):
		u.cancel(errAborted)
		<-u.done
	}
	return nil
}

// Partial implements Target: S3 keeps nothing of a cut download to
// resume from in another process (the parts' hash state is not in the
// bucket, and the upload is aborted).
func (t *Target) Partial(string) (int64, bool) { return 0, false }

// SweepPartials implements Target: the multipart uploads under the prefix
// started more than maxAge ago are aborted. S3 keeps no partial a later
// process can resume (the parts' hash state is not in the bucket), so an
// upload a killed process left is only garbage; maxAge keeps the uploads
// of downloads still running on other replicas. The bucket's lifecycle
// rule (docs/fetching.md) backs this up for a prefix no fetcher runs on
// any more.
func (t *Target) SweepPartials(ctx context.Context, maxAge time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cutoff := time.Now().Add(-maxAge)
	in := &awss3.ListMultipartUploadsInput{Bucket: &t.bucket}
	if t.prefix != "" {
		in.Prefix = aws.String(t.prefix + "/")
	}
	n := 0
	for {
		out, err := t.client.ListMultipartUploads(ctx, in)
		if err != nil {
			return n, fmt.Errorf("fetch target s3://%s: listing multipart uploads: %w", t.bucket, err)
		}
		for _, up := range out.Uploads {
			if up.Initiated == nil || up.Initiated.After(cutoff) {
				continue
			}
			_, err := t.client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &t.bucket, Key: up.Key, UploadId: up.UploadId})
			var nf *types.NoSuchUpload
			if err != nil && !errors.As(err, &nf) {
				return n, fmt.Errorf("fetch target s3://%s/%s: aborting a stale upload: %w", t.bucket, aws.ToString(up.Key), err)
			}
			if err == nil {
				n++
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return n, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// The interface guard: a Target is a target.Target.
var _ target.Target = (*Target)(nil)
