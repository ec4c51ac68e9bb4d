package main

import (
	"bytes"
	"context"
	"strings"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// specs are the CloudEvents attributes as the NATS binding's binary content
// mode carries them: headers named "ce-" and the attribute.
var specs = spec.WithPrefix("ce-")

// message lets sdk-go read a JetStream message as a CloudEvent
// (binding.ToEvent). The SDK's own NATS JetStream protocol module does the
// same, but it is not reachable from this project's module proxy; this is
// the part of it a consumer needs: the header-to-attribute mapping of the
// binding, with sdk-go's own attribute specs, types and validation.
type message struct {
	data   []byte
	header nats.Header
}

// newMessage wraps a stored message.
func newMessage(m jetstream.Msg) binding.Message {
	return message{data: m.Data(), header: m.Headers()}
}

func (m message) ReadEncoding() binding.Encoding {
	if m.header.Get(specs.PrefixedSpecVersionName()) != "" {
		return binding.EncodingBinary
	}
	if format.Lookup(m.header.Get("content-type")) != nil {
		return binding.EncodingStructured
	}
	return binding.EncodingUnknown
}

func (m message) ReadStructured(ctx context.Context, w binding.StructuredWriter) error {
	f := format.Lookup(m.header.Get("content-type"))
	if f == nil {
		return binding.ErrNotStructured
	}
	return w.SetStructuredEvent(ctx, f, bytes.NewReader(m.data))
}

func (m message) ReadBinary(_ context.Context, w binding.BinaryWriter) error {
	version := specs.Version(m.header.Get(specs.PrefixedSpecVersionName()))
	if version == nil {
		return binding.ErrNotBinary
	}
	for name, values := range m.header {
		if len(values) == 0 {
			continue
		}
		if strings.EqualFold(name, "content-type") {
			if err := w.SetAttribute(version.AttributeFromKind(spec.DataContentType), values[0]); err != nil {
				return err
			}
			continue
		}
		if !strings.HasPrefix(strings.ToLower(name), specs.Prefix()) {
			continue
		}
		if attr := version.Attribute(name); attr != nil {
			if attr.Kind() == spec.SpecVersion {
				continue
			}
			if err := w.SetAttribute(attr, values[0]); err != nil {
				return err
			}
		} else if err := w.SetExtension(strings.ToLower(name[len(specs.Prefix()):]), values[0]); err != nil {
			return err
		}
	}
	if len(m.data) > 0 {
		return w.SetData(bytes.NewReader(m.data))
	}
	return nil
}

// GetAttribute and GetExtension make message a binding.MessageMetadataReader,
// which sdk-go asks of every binary message.
func (m message) GetAttribute(k spec.Kind) (spec.Attribute, interface{}) {
	version := specs.Version(m.header.Get(specs.PrefixedSpecVersionName()))
	if version == nil {
		return nil, nil
	}
	attr := version.AttributeFromKind(k)
	if attr == nil {
		return nil, nil
	}
	name := attr.PrefixedName()
	if k == spec.DataContentType {
		name = "content-type"
	}
	if v := m.header.Get(name); v != "" {
		return attr, v
	}
	return attr, nil
}

func (m message) GetExtension(name string) interface{} {
	if v := m.header.Get(specs.Prefix() + name); v != "" {
		return v
	}
	return nil
}

func (m message) Finish(error) error { return nil }
