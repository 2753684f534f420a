package v1beta20200101

type Widget_Spec_ARM struct {
	Location   *string               `json:"location,omitempty"`
	Name       string                `json:"name,omitempty"`
	Properties *WidgetProperties_ARM `json:"properties,omitempty"`
}

// GetType returns the ARM Type of the resource. This is always "Microsoft.Widgets/widgets"
func (widget Widget_Spec_ARM) GetType() string {
	return "Microsoft.Widgets/widgets"
}

type WidgetProperties_ARM struct {
	Labels   map[string]string `json:"labels"`
	Password string            `json:"password,omitempty"`
	Size     *Widget_Size_Spec `json:"size,omitempty"`
	Zones    []string          `json:"zones"`
}

// +kubebuilder:validation:Enum={"Large","Small"}
type Widget_Size_Spec string
