// Placeholder: replaced by the backend conformance suite (issue 3).
export {};
