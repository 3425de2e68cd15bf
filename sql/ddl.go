package sql

import (
	"strconv"
	"strings"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/sql/plan"
	pg "github.com/pganalyze/pg_query_go/v6"
)

// CREATE STREAM name (col type, ...) WITH (key = 'col', event_time = 'col',
// out_of_orderness = '5 seconds', idle_timeout = '10 seconds') and CREATE TABLE, the same
// without the time options' meaning for windows (a table is keyed and upserted).

func (c *compiler) createRelation(st statement, cs *pg.CreateStmt) error {
	rv := cs.Relation
	if rv.Schemaname != "" || cs.OfTypename != nil || len(cs.InhRelations) > 0 || cs.Partspec != nil {
		return c.src.errAt(ErrUnsupported, rv.Location, "schemas, OF, INHERITS and PARTITION BY are not supported")
	}
	kind := plan.KindTable
	if st.stream {
		kind = plan.KindStream
	}
	s := plan.Schema{Name: rv.Relname, Kind: kind, Key: -1, EventTime: -1,
		OutOfOrdernessMs: c.opts.OutOfOrdernessMs, IdleTimeoutMs: c.opts.IdleTimeoutMs}
	if err := checkName(c.src, s.Name, rv.Location); err != nil {
		return err
	}
	cv := &converter{src: c.src}
	for _, el := range cs.TableElts {
		cd := el.GetColumnDef()
		if cd == nil {
			return c.src.errAt(ErrUnsupported, location(el), "table constraints are not supported: name the key with WITH (key = 'column')")
		}
		if len(cd.Constraints) > 0 || cd.RawDefault != nil || cd.CollClause != nil {
			return c.src.errAt(ErrUnsupported, cd.Location, "column %s: constraints, defaults and collations are not supported", cd.Colname)
		}
		t, err := cv.typeName(cd.TypeName)
		if err != nil {
			return err
		}
		if s.Column(cd.Colname) >= 0 {
			return c.src.errAt(ErrDefinition, cd.Location, "column %s defined twice", cd.Colname)
		}
		s.Columns = append(s.Columns, plan.Column{Name: cd.Colname, Type: t})
	}
	if len(s.Columns) == 0 {
		return c.src.errAt(ErrDefinition, rv.Location, "%s %s has no columns", kind, s.Name)
	}
	for _, o := range cs.Options {
		d := o.GetDefElem()
		val, err := optionText(c.src, d)
		if err != nil {
			return err
		}
		switch d.Defname {
		case "key", "event_time":
			i := s.Column(val)
			if i < 0 {
				return c.src.errAt(ErrUnknown, d.Location, "%s column %s: %s has no such column", d.Defname, val, s.Name)
			}
			if d.Defname == "key" {
				if s.Columns[i].Type == plan.TypeDouble {
					return c.src.errAt(ErrDefinition, d.Location, "key column %s is a double: keys must compare exactly", val)
				}
				s.Key = i
			} else {
				if s.Columns[i].Type != plan.TypeTimestamp {
					return c.src.errAt(ErrType, d.Location, "event_time column %s is %s, not timestamp", val, s.Columns[i].Type)
				}
				s.EventTime = i
			}
		case "out_of_orderness", "idle_timeout":
			ms, err := plan.ParseInterval(val)
			if err != nil || ms < 0 {
				return c.src.errAt(ErrDefinition, d.Location, "%s: %s", d.Defname, errText(err, "negative"))
			}
			if d.Defname == "out_of_orderness" {
				s.OutOfOrdernessMs = ms
			} else {
				s.IdleTimeoutMs = ms
			}
		case "format":
			switch strings.ToLower(val) {
			case "array":
				s.Layout = plan.LayoutArray
			case "map":
				s.Layout = plan.LayoutMap
			default:
				return c.src.errAt(ErrDefinition, d.Location, "format = '%s': want 'array' or 'map'", val)
			}
		case "partitions":
			if strings.ToLower(val) != "key" {
				return c.src.errAt(ErrUnsupported, d.Location, "partitions = '%s': records are partitioned by key", val)
			}
		default:
			return c.src.errAt(ErrUnknown, d.Location, "option %s (options: key, event_time, out_of_orderness, idle_timeout, format)", d.Defname)
		}
	}
	if s.Key < 0 {
		return c.src.errAt(ErrDefinition, rv.Location, "%s %s needs a key: WITH (key = 'column')", kind, s.Name)
	}
	if err := c.checkFree(s.Name, kind, rv.Location); err != nil {
		return err
	}
	c.reserve(s.Name, kind)
	c.p.Relations = append(c.p.Relations, s)
	c.names[s.Name] = &c.p.Relations[len(c.p.Relations)-1]
	return nil
}

// optionText returns a WITH option's value as text: 'quoted', a bare word or a number.
func optionText(src *source, d *pg.DefElem) (string, error) {
	if d.Arg == nil {
		return "", src.errAt(ErrDefinition, d.Location, "option %s needs a value", d.Defname)
	}
	switch x := d.Arg.GetNode().(type) {
	case *pg.Node_String_:
		return x.String_.Sval, nil
	case *pg.Node_Integer:
		return strconv.Itoa(int(x.Integer.Ival)), nil
	case *pg.Node_TypeName:
		return x.TypeName.Names[len(x.TypeName.Names)-1].GetString_().GetSval(), nil
	}
	return "", src.errAt(ErrDefinition, d.Location, "option %s: want a quoted value", d.Defname)
}

func errText(err error, otherwise string) string {
	if err != nil {
		return err.Error()
	}
	return otherwise
}

// checkName checks a relation or view name: the names derived from it must fit.
func checkName(src *source, name string, at int32) error {
	if len(name)+len(plan.SuffixByKey+partition.DeadLetterSuffix) > partition.MaxNameBytes {
		return src.errAt(ErrDefinition, at, "name %s is too long (at most %d bytes)", name, partition.MaxNameBytes-len(plan.SuffixByKey+partition.DeadLetterSuffix))
	}
	if strings.HasPrefix(name, "sys.") {
		return src.errAt(ErrDefinition, at, "name %s: sys. is reserved", name)
	}
	return nil
}
