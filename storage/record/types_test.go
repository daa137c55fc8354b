package record

import (
	"errors"
	"testing"
)

func TestDataTypeString(t *testing.T) {
	tests := []struct {
		typ        DataType
		want       string
		fixedWidth bool
	}{
		{Boolean(), "BOOLEAN", true},
		{TinyInt(), "TINYINT", true},
		{SmallInt(), "SMALLINT", true},
		{Int(), "INT", true},
		{BigInt(), "BIGINT", true},
		{Float(), "FLOAT", true},
		{Double(), "DOUBLE", true},
		{Decimal(10, 2), "DECIMAL(10,2)", true},
		{Decimal(18, 0), "DECIMAL(18,0)", true},
		{Decimal(19, 4), "DECIMAL(19,4)", false},
		{Decimal(38, 38), "DECIMAL(38,38)", false},
		{String(), "STRING", false},
		{Bytes(), "BYTES", false},
		{Date(), "DATE", true},
		{Time(), "TIME", true},
		{Timestamp(0), "TIMESTAMP(0)", true},
		{Timestamp(6), "TIMESTAMP(6)", true},
		{Timestamp(7), "TIMESTAMP(7)", false},
		{TimestampLTZ(3), "TIMESTAMP_LTZ(3)", true},
		{TimestampLTZ(9), "TIMESTAMP_LTZ(9)", false},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.typ.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if got := tt.typ.IsFixedWidth(); got != tt.fixedWidth {
				t.Errorf("IsFixedWidth() = %v, want %v", got, tt.fixedWidth)
			}
			if err := tt.typ.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}
			parsed, err := ParseType(tt.want)
			if err != nil || !parsed.Equal(tt.typ) {
				t.Errorf("ParseType(%q) = %v, %v; want %v", tt.want, parsed, err, tt.typ)
			}
			text, err := tt.typ.MarshalText()
			if err != nil || string(text) != tt.want {
				t.Errorf("MarshalText() = %q, %v", text, err)
			}
		})
	}
}

func TestDataTypeValidate(t *testing.T) {
	bad := []DataType{
		{},
		{kind: kindCount},
		Decimal(0, 0),
		Decimal(39, 0),
		Decimal(10, 11),
		Decimal(10, -1),
		Timestamp(-1),
		Timestamp(10),
		TimestampLTZ(10),
		{kind: KindBigInt, precision: 3},
		{kind: KindTimestamp, precision: 3, scale: 1},
	}
	for _, typ := range bad {
		t.Run(typ.String(), func(t *testing.T) {
			err := typ.Validate()
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("Validate() = %v, want ErrInvalidSchema", err)
			}
			if _, err := typ.MarshalText(); err == nil {
				t.Fatal("MarshalText() of an invalid type succeeded")
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for k := KindBoolean; k < kindCount; k++ {
		if k.String() == "INVALID" {
			t.Errorf("Kind(%d) has no name", k)
		}
	}
	if KindInvalid.String() != "INVALID" || kindCount.String() != "INVALID" {
		t.Error("invalid kinds should be named INVALID")
	}
}
