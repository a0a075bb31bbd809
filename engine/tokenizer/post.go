package tokenizer

// postProcessor adds special tokens around an encoded sequence when add_special_tokens is set.
type postProcessor interface {
	process(ids []int32) []int32
}

// postTemplate is HF's TemplateProcessing (single-sequence template), and also expresses
// BertProcessing ([CLS] $A [SEP]) and RobertaProcessing (<s> $A </s>).
type postTemplate struct {
	before, after []int32
}

func (p *postTemplate) process(ids []int32) []int32 {
	if len(p.before) == 0 && len(p.after) == 0 {
		return ids
	}
	out := make([]int32, 0, len(p.before)+len(ids)+len(p.after))
	out = append(out, p.before...)
	out = append(out, ids...)
	return append(out, p.after...)
}

// postSequence runs post-processors in order.
type postSequence []postProcessor

func (q postSequence) process(ids []int32) []int32 {
	for _, p := range q {
		ids = p.process(ids)
	}
	return ids
}
